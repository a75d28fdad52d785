package dispatch_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/kafka"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// A kfake cluster as the tenant's Kafka (SCRAM-SHA-512): every event
// arrives once, in arrival order (max_in_flight 1), keyed by the tenant,
// as a binary-mode CloudEvent with every ce-*, X-Lerian-* and webhook-*
// header; the signature verifies with consumer.Verify.
func TestKafka_BinaryModeRecordsWithEveryHeaderInOrder(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		cluster := testkit.KafkaWith(t, 3, []string{"tenant.events"},
			kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "acme", "scram-secret"))
		dialer := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
		prod, err := kafka.New(kafka.Options{Dial: dialer.DialContext, Timeout: testkit.Patience})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { prod.Close() })
		spans := tracetest.NewSpanRecorder()
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
			c.Destinations = destinations(t, testkit.Patience, map[string]destination.Driver{hub.DestinationKafka: prod})
			c.Tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("test")
		}})
		r.brokerSub("sub_kafka", hub.Destination{Type: hub.DestinationKafka, Brokers: cluster.ListenAddrs(), Topic: "tenant.events",
			SASLMechanism: "SCRAM-SHA-512", SASLUsername: "acme"}, hub.Credentials{Password: "scram-secret"})
		const n = 30
		for i := range n {
			r.publish(event("acme", fmt.Sprintf("evt-%02d", i)))
		}
		r.run()

		got := testkit.ReadRecords(t, cluster, "tenant.events", n, kgo.SASL(scram512("acme", "scram-secret")))
		if len(got) != n {
			t.Fatalf("%d records, want %d: each event once", len(got), n)
		}
		for i, rec := range got {
			id := fmt.Sprintf("evt-%02d", i)
			h := http.Header{}
			for _, kv := range rec.Headers {
				h.Set(kv.Key, string(kv.Value))
			}
			if string(rec.Key) != "acme" || h.Get("ce-id") != id || h.Get("X-Lerian-Event-Id") != id || rec.Partition != got[0].Partition {
				t.Fatalf("record %d: key %q, ce-id %q, partition %d; want acme, %s, one partition (in arrival order)", i, rec.Key, h.Get("ce-id"), rec.Partition, id)
			}
			for _, k := range []string{"content-type", "ce-id", "ce-type", "ce-source", "ce-specversion", "ce-time", "ce-subject", "ce-tenantid", "ce-schemaversion",
				"X-Lerian-Event-Id", "X-Lerian-Delivery-Id", "X-Lerian-Event-Type", "X-Lerian-Tenant-Id", "X-Lerian-Sequence",
				"webhook-id", "webhook-timestamp", "webhook-signature"} {
				if h.Get(k) == "" {
					t.Fatalf("record %d has no %s header: %v", i, k, h)
				}
			}
			if h.Get("X-Lerian-Sequence") != strconv.Itoa(i+1) || h.Get("ce-type") != "studio.lerian.transaction.posted" || h.Get("content-type") != "application/json" {
				t.Fatalf("record %d headers %v", i, h)
			}
			if err := consumer.VerifyAt(r.secret, h, rec.Value, 5*time.Minute, r.clock.Now()); err != nil {
				t.Fatalf("record %d does not verify: %v", i, err)
			}
		}
		testkit.WaitFor(t, "every job succeeded", func() bool { return r.allSucceeded("acme", "sub_kafka", n) })

		// Each publish is a span with the messaging conventions, not HTTP's
		// (the rig's webhook subscription keeps its POST spans).
		kinds := map[string]int{}
		for _, sp := range spans.Ended() {
			attrs := map[string]string{}
			for _, kv := range sp.Attributes() {
				attrs[string(kv.Key)] = kv.Value.Emit()
			}
			sub := attrs["streaming_hub.subscription_id"]
			kinds[sub+" "+sp.Name()]++
			if sub == "sub_kafka" && (sp.SpanKind() != trace.SpanKindClient || attrs["messaging.system"] != "kafka" ||
				attrs["messaging.destination.name"] != "tenant.events" || attrs["messaging.operation.type"] != "send" ||
				attrs["server.address"] != "127.0.0.1" || attrs["url.full"] != "" || attrs["http.request.method"] != "" ||
				!strings.HasPrefix(attrs["messaging.message.id"], "evt-")) {
				t.Fatalf("span %q (%v): %v", sp.Name(), sp.SpanKind(), attrs)
			}
		}
		if kinds["sub_kafka send tenant.events"] != n || kinds["sub_1 POST"] != n || len(kinds) != 2 {
			t.Fatalf("attempt spans by subscription and name: %v, want %d each of sub_kafka's \"send tenant.events\" and sub_1's POST", kinds, n)
		}
	})
}

func scram512(user, pass string) sasl.Mechanism {
	return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
}

// A Kafka destination that refuses the hub's password fails the attempt:
// it waits for its retry, nothing is reported delivered.
func TestKafka_RefusedCredentialsFailTheAttempt(t *testing.T) {
	testkit.Long(t)
	cluster := testkit.KafkaWith(t, 1, []string{"tenant.events"},
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "acme", "scram-secret"))
	dialer := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	prod, err := kafka.New(kafka.Options{Dial: dialer.DialContext, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prod.Close() })
	r := newRig(t, testkit.Drivers[len(testkit.Drivers)-1], rigOptions{cfg: func(c *dispatch.Config) {
		c.Destinations = destinations(t, testkit.Patience, map[string]destination.Driver{hub.DestinationKafka: prod})
	}})
	r.brokerSub("sub_kafka", hub.Destination{Type: hub.DestinationKafka, Brokers: cluster.ListenAddrs(), Topic: "tenant.events",
		SASLMechanism: "SCRAM-SHA-512", SASLUsername: "acme"}, hub.Credentials{Password: "wrong"})
	r.publish(event("acme", "evt-1"))
	r.run()
	testkit.WaitFor(t, "the failed attempt recorded", func() bool {
		jobs := r.jobsOf("acme", "sub_kafka")
		return len(jobs) == 1 && jobs[0].Attempts == 1 && jobs[0].Status == hub.JobPending && jobs[0].LastError != ""
	})
}
