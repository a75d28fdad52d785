package app_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const workedSig = "v1.YsgRbSCWqKBA7wHqLhYJUeaETy2dPXVmNQdNiZcd0-0"

// workedRecord is docs/lerian-platform.md's worked example as lib-streaming
// v4 signs it, on the dev hub's topic.
func workedRecord() *kgo.Record {
	h := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
	return &kgo.Record{Topic: app.DevTopic, Partition: 0, Value: []byte(`{"amount":"10.00"}`), Headers: []kgo.RecordHeader{
		h("ce-specversion", "1.0"), h("ce-id", "0190a8e2-0000-7000-8000-000000000001"), h("ce-source", "ledger"),
		h("ce-type", "studio.lerian.transaction.created"), h("ce-time", "2026-09-26T12:00:00Z"), h("ce-subject", "acc-1"),
		h("ce-tenantid", "tenant-1"), h("ce-datacontenttype", "application/json"), h("ce-schemaversion", "1.0.0"),
		h("ce-resourcetype", "transaction"), h("ce-eventtype", "created"), h("ce-sigkid", "k1"),
		h("ce-sigts", "2026-09-26T12:00:05.123456789Z"), h("ce-sig", workedSig),
	}}
}

// Signed envelopes end to end (docs/lerian-platform.md): with key k1 bound
// to source ledger, the worked example's signed record is accepted, stored and pulled with producer_key_id k1, and
// delivered with X-Lerian-Producer-Key: k1 and the producer's ce-sig*
// headers passed on; the same record with its value changed is rejected
// signature_invalid, counted under that reason, never delivered.
func TestSignedEnvelopes_AcceptedWithTheirKeyTamperedRejected(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		secret := make([]byte, 32)
		for i := range secret {
			secret[i] = byte(i)
		}
		l := startLiveWith(t, d, testkit.NewClock(), map[string]string{
			"STREAMING_HUB_SIGNATURE_KEYS": "k1@ledger:" + base64.StdEncoding.EncodeToString(secret),
		})
		sink := newRecorder(t)
		ctx := context.Background()
		if _, err := l.Store.CreateTenant(ctx, store.CreateTenantParams{ID: "tenant-1", Name: "tenant-1"}); err != nil {
			t.Fatal(err)
		}
		s := hub.Subscription{
			ID: hub.NewID("sub", l.clock.Now()), TenantID: "tenant-1", Name: "signed",
			EventTypes:  []hub.EventTypeRef{{Type: "transaction.created", SchemaMajor: 1}},
			Destination: hub.Destination{Type: "webhook", URL: sink.URL},
			MaxInFlight: 1, Enabled: true, VerificationState: hub.VerificationActive,
		}
		if err := destination.SealSecrets(l.Keyring, &s, hub.SubscriptionSecrets{Signing: []hub.SigningSecret{{Secret: destination.NewSecret()}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Store.CreateSubscription(ctx, s); err != nil {
			t.Fatal(err)
		}

		tampered := workedRecord()
		tampered.Value = []byte(`{"amount":"99.00"}`)
		l.produce(tampered, workedRecord())
		testkit.WaitFor(t, "the signed event's delivery", func() bool { return sink.count() == 1 })

		req, body := sink.request(0)
		if string(body) != `{"amount":"10.00"}` || req.Header.Get("X-Lerian-Producer-Key") != "k1" ||
			req.Header.Get("ce-sig") != workedSig || req.Header.Get("ce-sigkid") != "k1" || req.Header.Get("ce-sigts") != "2026-09-26T12:00:05.123456789Z" {
			t.Fatalf("delivery: body %s, headers %v", body, req.Header)
		}

		var page struct {
			Data []struct {
				ID            string `json:"id"`
				ProducerKeyID string `json:"producer_key_id"`
			} `json:"data"`
		}
		if st := l.api("GET", "/v1/events", "tenant-1", "", &page); st != 200 || len(page.Data) != 1 || page.Data[0].ProducerKeyID != "k1" {
			t.Fatalf("pull = %d %+v", st, page.Data)
		}
		var one map[string]any
		if st := l.api("GET", "/v1/events/0190a8e2-0000-7000-8000-000000000001", "tenant-1", "", &one); st != 200 || one["producer_key_id"] != "k1" {
			t.Fatalf("GET the event = %d %v", st, one)
		}

		rej, err := l.Store.ListRejections(ctx, store.ListRejectionsParams{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rej) != 1 || rej[0].Offset != 0 || !strings.HasPrefix(rej[0].Reason, "signature_invalid") {
			t.Fatalf("rejections = %+v", rej)
		}
		if n := testutil.ToFloat64(l.Metrics.IngestRecords.WithLabelValues("reject", "signature_invalid")); n != 1 {
			t.Fatalf("ingest_records_total{reject,signature_invalid} = %v", n)
		}
		if sink.count() != 1 {
			t.Fatalf("%d deliveries: the tampered record was delivered", sink.count())
		}
	})
}
