package ingest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/ingest"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// signedRecord is docs/lerian-platform.md's worked example, signed by key k1
// of source ledger, on topic.
func signedRecord(topic string) *kgo.Record {
	h := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
	return &kgo.Record{Topic: topic, Partition: 0, Value: []byte(`{"amount":"10.00"}`), Headers: []kgo.RecordHeader{
		h("ce-specversion", "1.0"), h("ce-id", "0190a8e2-0000-7000-8000-000000000001"), h("ce-source", "ledger"),
		h("ce-type", "studio.lerian.transaction.created"), h("ce-time", "2026-09-26T12:00:00Z"), h("ce-subject", "acc-1"),
		h("ce-tenantid", "tenant-1"), h("ce-datacontenttype", "application/json"), h("ce-schemaversion", "1.0.0"),
		h("ce-resourcetype", "transaction"), h("ce-eventtype", "created"), h("ce-sigkid", "k1"),
		h("ce-sigts", "2026-09-26T12:00:05.123456789Z"), h("ce-sig", "v1.YsgRbSCWqKBA7wHqLhYJUeaETy2dPXVmNQdNiZcd0-0"),
	}}
}

// Through Kafka into each store: the signed record is stored with its key
// id; the same record with its value changed is rejected
// signature_invalid, one naming an unknown key signature_unknown_key, an
// unsigned one signature_missing (signatures required).
func TestConsumer_SignedEnvelopes(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		const libTopic = "lerian.streaming.ledger"
		s := d.Open(t, store.Options{})
		tenants(t, s, "tenant-1")
		kafka := testkit.Kafka(t, 1, libTopic)
		prod := testkit.Producer(t, kafka)
		cfg := consumerConfig(kafka.ListenAddrs(), s)
		secret := make([]byte, 32)
		for i := range secret {
			secret[i] = byte(i)
		}
		cfg.Signatures = config.Signatures{Keys: []config.SignatureKey{{ID: "k1", Source: "ledger", Secret: secret}}, Require: true}
		startConsumer(t, cfg)

		tampered := signedRecord(libTopic)
		tampered.Value = []byte(`{"amount":"99.00"}`)
		unknown := signedRecord(libTopic)
		for i, h := range unknown.Headers {
			if h.Key == "ce-sigkid" {
				unknown.Headers[i].Value = []byte("k9")
			}
		}
		unsigned := signedRecord(libTopic)
		unsigned.Headers = unsigned.Headers[:11]
		testkit.Produce(t, prod, tampered, unknown, unsigned, signedRecord(libTopic))
		testkit.WaitFor(t, "offset 4 committed", func() bool {
			return testkit.CommittedOffsets(t, prod, cfg.Group, libTopic)[0] == 4
		})

		evs := inbox(t, s, "tenant-1")
		if len(evs) != 1 || evs[0].ProducerKeyID != "k1" || string(evs[0].Data) != `{"amount":"10.00"}` || evs[0].Offset != 3 {
			t.Fatalf("inbox = %+v", evs)
		}
		rej, err := s.ListRejections(context.Background(), store.ListRejectionsParams{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]string{0: ingest.ReasonSignatureInvalid, 1: ingest.ReasonSignatureUnknownKey, 2: ingest.ReasonSignatureMissing}
		if len(rej) != len(want) {
			t.Fatalf("rejections = %+v", rej)
		}
		for _, r := range rej {
			if !strings.HasPrefix(r.Reason, want[r.Offset]+": ") {
				t.Errorf("offset %d rejected %q, want %s", r.Offset, r.Reason, want[r.Offset])
			}
		}
		for _, reason := range want {
			if n := testutil.ToFloat64(cfg.Metrics.IngestRecords.WithLabelValues("reject", reason)); n != 1 {
				t.Errorf("ingest_records_total{reject,%s} = %v", reason, n)
			}
		}
	})
}
