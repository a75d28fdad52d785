package ingest_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// Records exactly as Lerian's producer library (lib-streaming v3)
// publishes them, on its one topic per application: facts are accepted
// with their five-segment ce-type, system events are discarded (counted,
// not stored, not rejected), the hub's reserved prefix and a ce-eventtype
// that contradicts ce-type are rejected.
func TestConsumer_LibStreamingV3Records(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		const libTopic = "lerian.streaming.ledger"
		s := d.Open(t, store.Options{})
		tenants(t, s, "acme")
		kafka := testkit.Kafka(t, 1, libTopic)
		prod := testkit.Producer(t, kafka)
		cfg := consumerConfig(kafka.ListenAddrs(), s)
		startConsumer(t, cfg)

		reserved := testkit.LibFact("acme", "hub-1")
		reserved.Source = "hub" // studio.lerian.hub.transaction.created
		reservedRec := testkit.LibRecord(reserved)
		reservedRec.Topic = libTopic
		contradicting := testkit.LibRecord(testkit.LibFact("acme", "bad-2"))
		for i, h := range contradicting.Headers {
			if h.Key == "ce-eventtype" {
				contradicting.Headers[i].Value = []byte("posted")
			}
		}
		plain := testkit.LibFact("acme", "l-2") // only what the library always sends
		plain.Subject, plain.DataContentType, plain.DataSchema, plain.TraceParent, plain.TraceState = "", "", "", "", ""
		recs := []*kgo.Record{
			testkit.LibRecord(testkit.LibFact("acme", "l-1")),
			testkit.LibRecord(testkit.LibSystemEvent("sys-1")),
			testkit.LibRecord(plain),
			reservedRec,
			contradicting,
		}
		for _, r := range recs {
			r.Partition = 0
		}
		testkit.Produce(t, prod, recs...)
		testkit.WaitFor(t, "offset 5 committed", func() bool {
			return testkit.CommittedOffsets(t, prod, cfg.Group, libTopic)[0] == 5
		})

		evs := inbox(t, s, "acme")
		if got := ids(evs); got != "[l-1#1 l-2#2]" {
			t.Fatalf("inbox = %s", got)
		}
		ev := evs[0]
		if ev.Type != "studio.lerian.ledger.transaction.created" || ev.EventType != "transaction.created" || ev.Source != "ledger" ||
			ev.Time != "2026-11-30T12:00:00.123456789Z" || ev.SchemaVersion != "1.2.0" || ev.SchemaMajor != 1 ||
			ev.Subject != "transaction/l-1" || ev.DataContentType != "application/json" ||
			ev.DataSchema != "https://schemas.lerian.studio/ledger/transaction.created/1.2.0.json" ||
			string(ev.Data) != `{"id":"l-1","amount":"10.00"}` || ev.Topic != libTopic {
			t.Errorf("stored fact = %+v", ev)
		}
		if ev.Extensions["ce-resourcetype"] != "transaction" || ev.Extensions["ce-eventtype"] != "created" || len(ev.Extensions) != 2 {
			t.Errorf("extensions = %v", ev.Extensions)
		}
		if evs[1].DataContentType != hub.DefaultContentType || evs[1].Subject != "" {
			t.Errorf("minimal fact = %+v", evs[1])
		}

		rej, err := s.ListRejections(context.Background(), store.ListRejectionsParams{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[int64]string{}
		for _, r := range rej {
			got[r.Offset] = r.Reason
		}
		want := map[int64]string{
			3: "ce-type studio.lerian.hub.* is reserved for the hub's own events",
			4: "ce-eventtype must equal the <event> of ce-type",
		}
		if len(got) != len(want) || got[3] != want[3] || got[4] != want[4] {
			t.Fatalf("rejections by offset = %v, want %v (the system event at offset 1 is not one)", got, want)
		}
		for labels, n := range map[[2]string]float64{
			{"accept", "accepted"}:      2,
			{"discard", "system_event"}: 1,
			{"reject", want[3]}:         1,
			{"reject", want[4]}:         1,
		} {
			if got := testutil.ToFloat64(cfg.Metrics.IngestRecords.WithLabelValues(labels[0], labels[1])); got != n {
				t.Errorf("ingest_records_total{verdict=%q,reason=%q} = %v, want %v", labels[0], labels[1], got, n)
			}
		}
	})
}
