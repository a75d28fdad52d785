package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A fact published by lib-streaming v3 is delivered as transaction.created;
// its system events reach no one, are counted as discarded and are not in
// the operators' rejections.
func TestEndToEnd_LibStreamingV3FactsAreDeliveredAndSystemEventsDiscarded(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		clock := testkit.NewClock()
		l := startLive(t, d, clock)
		sink := newRecorder(t)
		ctx := context.Background()
		if _, err := l.Store.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
			t.Fatal(err)
		}
		s := hub.Subscription{
			ID: hub.NewID("sub", clock.Now()), TenantID: "acme", Name: "ledger",
			EventTypes:    []hub.EventTypeRef{{Type: "transaction.created", SchemaMajor: 1}},
			Destination:   hub.Destination{Type: "webhook", URL: sink.URL},
			RetrySchedule: []string{"5s"}, MaxInFlight: 1, Enabled: true, VerificationState: hub.VerificationActive,
		}
		if err := destination.SealSecrets(l.Keyring, &s, hub.SubscriptionSecrets{Signing: []hub.SigningSecret{{Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Store.CreateSubscription(ctx, s); err != nil {
			t.Fatal(err)
		}

		// The library's topic is new to the broker: created on first produce.
		prod, err := kgo.NewClient(kgo.SeedBrokers(l.KafkaAddrs()...), kgo.AllowAutoTopicCreation())
		if err != nil {
			t.Fatal(err)
		}
		defer prod.Close()
		testkit.Produce(t, prod, testkit.LibRecord(testkit.LibSystemEvent("sys-1")), testkit.LibRecord(testkit.LibFact("acme", "fact-1")))
		testkit.WaitFor(t, "the delivery", func() bool { return sink.count() == 1 })
		req, body := sink.request(0)
		for k, v := range map[string]string{
			"X-Lerian-Event-Type": "transaction.created",
			"X-Lerian-Event-Id":   "fact-1",
			"X-Lerian-Tenant-Id":  "acme",
			"ce-type":             "studio.lerian.ledger.transaction.created",
			"ce-source":           "ledger",
			"ce-time":             "2026-11-30T12:00:00.123456789Z",
		} {
			if got := req.Header.Get(k); got != v {
				t.Errorf("header %s = %q, want %q", k, got, v)
			}
		}
		if string(body) != `{"id":"fact-1","amount":"10.00"}` {
			t.Errorf("body %s", body)
		}

		testkit.WaitFor(t, "the system event counted", func() bool {
			return strings.Contains(get(t, l.Hub.Hub, "/metrics"), `streaming_hub_ingest_records_total{reason="system_event",verdict="discard"} 1`)
		})
		var rej struct{ Data []any }
		if status := l.api("GET", "/v1/admin/rejections", "", "", &rej); status != 200 || len(rej.Data) != 0 {
			t.Fatalf("rejections: %d %v", status, rej.Data)
		}
		// The system event came first on the partition: had it made a
		// job, it would have been delivered before the fact.
		if n := sink.count(); n != 1 {
			t.Fatalf("%d deliveries: the system event reached a tenant", n)
		}
	})
}
