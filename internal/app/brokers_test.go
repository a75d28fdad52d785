package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The whole dev-mode hub delivers to a RabbitMQ destination made through
// the API: verified by a published hub.verification message, then an
// event produced to Kafka arrives in the bound queue, signed with the
// subscription's secret.
func TestEndToEnd_RabbitMQDestinationThroughTheAPI(t *testing.T) {
	mq := testkit.NewRabbit(t, "transaction.#")
	clock := testkit.NewClock()
	l := startLive(t, testkit.Drivers[len(testkit.Drivers)-1], clock)
	if _, err := l.Store.CreateTenant(context.Background(), store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	var sub struct {
		ID     string `json:"id"`
		Secret string `json:"signing_secret"`
	}
	if code := l.api("POST", "/v1/subscriptions", "acme", `{"name":"mq","event_types":[{"type":"transaction.posted","schema_major":1}],
	  "destination":{"type":"rabbitmq","url":"`+mq.URL+`","exchange":"`+mq.Exchange+`","routing_key":"{type}"}}`, &sub); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if code := l.api("POST", "/v1/subscriptions/"+sub.ID+"/verify", "acme", "", nil); code != 200 {
		t.Fatalf("verify: %d", code)
	}
	l.produce(ceRecord("acme", "evt-mq-1", ""))
	testkit.WaitFor(t, "the event in the queue", func() bool {
		for _, m := range mq.Take(t) {
			if m.MessageId != "evt-mq-1" {
				continue // the verification message
			}
			h := http.Header{}
			for k, v := range m.Headers {
				if s, ok := v.(string); ok {
					h.Set(k, s)
				}
			}
			if err := consumer.VerifyAt(sub.Secret, h, m.Body, 5*time.Minute, clock.Now()); err != nil {
				t.Fatalf("the message does not verify: %v", err)
			}
			return true
		}
		return false
	})
}

// The whole dev-mode hub delivers to a NATS JetStream destination made
// through the API, on each store driver: verified by a hub.verification
// message on the subject, then an event produced to Kafka lands in the
// stream with Nats-Msg-Id = its ce-id, signed with the subscription's
// secret.
func TestEndToEnd_NATSDestinationThroughTheAPI(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		n := testkit.NewNATS(t, "hub", "n4ts-s3cret")
		n.CreateStream(t, "EVENTS", "events.>")
		clock := testkit.NewClock()
		l := startLive(t, d, clock)
		if _, err := l.Store.CreateTenant(context.Background(), store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
			t.Fatal(err)
		}
		var sub struct {
			ID     string `json:"id"`
			Secret string `json:"signing_secret"`
		}
		withCreds := strings.Replace(n.URL, "nats://", "nats://hub:n4ts-s3cret@", 1)
		if code := l.api("POST", "/v1/subscriptions", "acme", `{"name":"nats","event_types":[{"type":"transaction.posted","schema_major":1}],
		  "destination":{"type":"nats","url":"`+withCreds+`","subject":"events.acme","stream":"EVENTS"}}`, &sub); code != 201 {
			t.Fatalf("create: %d", code)
		}
		if code := l.api("POST", "/v1/subscriptions/"+sub.ID+"/verify", "acme", "", nil); code != 200 {
			t.Fatalf("verify: %d", code)
		}
		l.produce(ceRecord("acme", "evt-nats-1", ""))
		testkit.WaitFor(t, "the event in the stream", func() bool {
			for _, m := range n.Messages(t, "EVENTS") {
				if m.Header.Get("Nats-Msg-Id") != "evt-nats-1" {
					continue // the verification message
				}
				if err := consumer.VerifyAt(sub.Secret, http.Header(m.Header), m.Data, 5*time.Minute, clock.Now()); err != nil {
					t.Fatalf("the message does not verify: %v", err)
				}
				return true
			}
			return false
		})
	})
}

// The whole dev-mode hub delivers to a Google Cloud Pub/Sub destination
// made through the API, on each store driver, the client library sent to
// a fake server by PUBSUB_EMULATOR_HOST: verified by a hub.verification
// message on the topic, then an event produced to Kafka lands on it once,
// ordering key = the tenant, signed with the subscription's secret.
func TestEndToEnd_PubSubDestinationThroughTheAPI(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ps := testkit.NewPubSub(t)
		ps.CreateTopic(t, "acme-events", "events")
		t.Setenv("PUBSUB_EMULATOR_HOST", ps.Addr)
		clock := testkit.NewClock()
		l := startLive(t, d, clock)
		if _, err := l.Store.CreateTenant(context.Background(), store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
			t.Fatal(err)
		}
		var sub struct {
			ID     string `json:"id"`
			Secret string `json:"signing_secret"`
		}
		if code := l.api("POST", "/v1/subscriptions", "acme", `{"name":"pubsub","event_types":[{"type":"transaction.posted","schema_major":1}],
		  "destination":{"type":"pubsub","project":"acme-events","topic":"events","credentials":`+testkit.ServiceAccountJSON(t, "acme-events")+`}}`, &sub); code != 201 {
			t.Fatalf("create: %d", code)
		}
		if code := l.api("POST", "/v1/subscriptions/"+sub.ID+"/verify", "acme", "", nil); code != 200 {
			t.Fatalf("verify: %d", code)
		}
		l.produce(ceRecord("acme", "evt-pubsub-1", ""))
		testkit.WaitFor(t, "the event on the topic", func() bool {
			for _, m := range ps.Messages("acme-events", "events") {
				if m.Attributes["ce-id"] != "evt-pubsub-1" {
					continue // the verification message
				}
				h := http.Header{}
				for k, v := range m.Attributes {
					h.Set(k, v)
				}
				if err := consumer.VerifyAt(sub.Secret, h, m.Data, 5*time.Minute, clock.Now()); err != nil || m.OrderingKey != "acme" {
					t.Fatalf("the message does not verify (%v) or its ordering key is %q", err, m.OrderingKey)
				}
				return true
			}
			return false
		})
	})
}
