package ingest_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/ingest"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const dlqTopic = "lerian.streaming.ledger.dlq"

// startDLQ runs a DLQ consumer in group until the test ends (or stop).
func startDLQ(t *testing.T, brokers []string, s ingest.DLQStore, group string) (*ingest.DLQConsumer, *metrics.Metrics, func()) {
	t.Helper()
	cfg := ingest.DLQConfig{Ingest: config.Defaults(config.Serve).Ingest, Store: s, Metrics: metrics.New()}
	cfg.Brokers, cfg.DLQGroup = brokers, group
	cfg.RetryMin, cfg.RetryMax = 10*time.Millisecond, 50*time.Millisecond
	c, err := ingest.NewDLQ(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	testkit.WaitFor(t, "the DLQ consumer to join its group", func() bool { return c.Ready(context.Background()) == nil })
	return c, cfg.Metrics, stop
}

func dlqRows(t *testing.T, s store.Store) []store.DLQRecord {
	t.Helper()
	got, err := s.ListDLQRecords(context.Background(), store.ListDLQParams{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// docs/lerian-platform.md: a record lib-streaming quarantined on
// lerian.streaming.<app>.dlq is kept with its headers, source coordinates,
// ce-id, tenant and the start of its value, its offset committed in the DLQ
// group; it is delivered to nobody (the delivery consumer, running alongside,
// never reads it). Hostile records are kept safely behind it and never block
// the partition, and a second reading keeps one row per record.
func TestDLQConsumer_KeepsProducerDeadLettersAndDeliversNone(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		s := d.Open(t, store.Options{})
		tenants(t, s, "acme")
		kafka := testkit.Kafka(t, 1, topic, dlqTopic)
		prod := testkit.Producer(t, kafka)
		h := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }

		quarantined := testkit.CERecord(dlqTopic, 0, "acme", "dead-1",
			h("x-lerian-dlq-source-topic", "lerian.streaming.ledger"),
			h("x-lerian-dlq-source-partition", "3"),
			h("x-lerian-dlq-source-offset", "42"),
			h("x-lerian-dlq-error-message", "handler failed"))
		quarantined.Value = []byte(`{"amount":"10.00"}` + strings.Repeat(" ", 8<<10))
		omitted := testkit.CERecord(dlqTopic, 0, "acme", "dead-2", h("x-lerian-dlq-payload-omitted", "true"))
		omitted.Value = nil
		huge := strings.Repeat("n", 200<<10)
		hostile := &kgo.Record{Topic: dlqTopic, Partition: 0, Value: []byte("\x00\xff\xfe<script>"), Headers: []kgo.RecordHeader{
			h("ce-id", "id\x00\xff"), h(huge, huge), h("x\x00nul", "\xff"), h("x-lerian-dlq-source-offset", "not a number"),
		}}
		bare := &kgo.Record{Topic: dlqTopic, Partition: 0, Value: []byte("no headers at all")}
		testkit.Produce(t, prod, quarantined, omitted, hostile, bare, testkit.CERecord(topic, 0, "acme", "live-1"))

		startConsumer(t, consumerConfig(kafka.ListenAddrs(), s))
		_, m, stop := startDLQ(t, kafka.ListenAddrs(), s, "streaming-hub-dlq.test")
		testkit.WaitFor(t, "the DLQ offsets committed", func() bool {
			return testkit.CommittedOffsets(t, prod, "streaming-hub-dlq.test", dlqTopic)[0] == 4
		})
		testkit.WaitFor(t, "the live event", func() bool { return len(inbox(t, s, "acme")) == 1 })

		rows := dlqRows(t, s)
		if len(rows) != 4 {
			t.Fatalf("%d DLQ records, want 4", len(rows))
		}
		// Newest first: bare, hostile, omitted, quarantined.
		q := rows[3]
		if q.Topic != dlqTopic || q.Offset != 0 || q.SourceTopic != "lerian.streaming.ledger" ||
			q.SourcePartition == nil || *q.SourcePartition != 3 || q.SourceOffset == nil || *q.SourceOffset != 42 ||
			q.CEID != "dead-1" || q.TenantID != "acme" || q.PayloadOmitted ||
			q.Headers["x-lerian-dlq-error-message"] != "handler failed" || q.Headers["ce-type"] != "studio.lerian.transaction.posted" ||
			len(q.ValueExcerpt) != store.MaxDLQValueBytes || !strings.HasPrefix(q.ValueExcerpt, `{"amount":"10.00"}`) {
			t.Fatalf("quarantined record kept as %+v", q)
		}
		if o := rows[2]; !o.PayloadOmitted || o.ValueExcerpt != "" || o.SourcePartition != nil || o.SourceOffset != nil {
			t.Fatalf("payload-omitted record kept as %+v", o)
		}
		x := rows[1]
		if x.SourceOffset != nil || !utf8.ValidString(x.CEID) || strings.ContainsRune(x.CEID, 0) ||
			!utf8.ValidString(x.ValueExcerpt) || strings.ContainsRune(x.ValueExcerpt, 0) {
			t.Fatalf("hostile record kept as %+v", x)
		}
		for k, v := range x.Headers {
			if len(k) > store.MaxRejectionNameBytes || len(v) > store.MaxRejectionHeaderBytes || !utf8.ValidString(k+v) || strings.ContainsRune(k+v, 0) {
				t.Fatalf("hostile header kept unsafely: %d-byte name", len(k))
			}
		}
		if b := rows[0]; b.ValueExcerpt != "no headers at all" || b.SourceTopic != "" || b.CEID != "" || len(b.Headers) != 0 {
			t.Fatalf("bare record kept as %+v", b)
		}
		if got := ids(inbox(t, s, "acme")); got != "[live-1#1]" {
			t.Fatalf("inbox = %s: a DLQ record became an event", got)
		}
		if n := testutil.ToFloat64(m.DLQRecords.WithLabelValues(dlqTopic)); n != 4 {
			t.Fatalf("streaming_hub_dlq_records_total{topic=%q} = %v, want 4", dlqTopic, n)
		}

		// Read again from the start (another group): still one row each.
		stop()
		_, _, _ = startDLQ(t, kafka.ListenAddrs(), s, "streaming-hub-dlq.again")
		testkit.WaitFor(t, "the second reading committed", func() bool {
			return testkit.CommittedOffsets(t, prod, "streaming-hub-dlq.again", dlqTopic)[0] == 4
		})
		if got := len(dlqRows(t, s)); got != 4 {
			t.Fatalf("%d DLQ records after a redelivery, want 4", got)
		}
	})
}

// Whatever KAFKA_TOPICS_REGEX says, the delivery consumer never subscribes
// to .dlq nor .commands topics (docs/lerian-platform.md): the hub carries
// facts only.
func TestConsumer_NeverReadsDLQOrCommandsWhateverTheRegex(t *testing.T) {
	s := testkit.OpenSQLite(t, store.Options{})
	tenants(t, s, "acme")
	kafka := testkit.Kafka(t, 1, topic, "lerian.streaming.ledger.commands", dlqTopic)
	prod := testkit.Producer(t, kafka)
	testkit.Produce(t, prod,
		testkit.CERecord("lerian.streaming.ledger.commands", 0, "acme", "cmd"),
		testkit.CERecord(dlqTopic, 0, "acme", "dlq"),
		testkit.CERecord(topic, 0, "acme", "event"),
	)
	for _, re := range []string{`.*`, `^lerian\.streaming\..+\.(dlq|commands)$|` + topic} {
		cfg := consumerConfig(kafka.ListenAddrs(), s)
		cfg.TopicsRegex, cfg.Group = re, "streaming-hub.test-"+fmt.Sprint(len(re))
		c, stop := startConsumer(t, cfg)
		testkit.WaitFor(t, "the event", func() bool { return len(inbox(t, s, "acme")) >= 1 })
		testkit.WaitFor(t, "the committed event", func() bool {
			return testkit.CommittedOffsets(t, prod, cfg.Group, topic)[0] == 1
		})
		for _, tp := range c.Client().GetConsumeTopics() {
			if strings.HasSuffix(tp, ".dlq") || strings.HasSuffix(tp, ".commands") {
				t.Fatalf("regex %q: consuming %s", re, tp)
			}
		}
		stop()
	}
	if got := ids(inbox(t, s, "acme")); got != "[event#1]" {
		t.Fatalf("inbox = %s: the consumer read an excluded topic", got)
	}
}

// A consumer quarantine as lib-streaming v3 writes it: the quarantined
// record's own headers verbatim, then its x-lerian-dlq-* headers
// (docs/lerian-platform.md#producer-dlq-topics). When the quarantined
// record already carried x-lerian-dlq-* headers (a DLQ copy republished to
// its topic and refused again), the stale ones come first: what the hub
// keeps must name the record this quarantine is about, the last ones.
func TestDLQRecordOf_TheQuarantinesOwnHeadersWinOverStaleOnes(t *testing.T) {
	h := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
	r := &kgo.Record{Topic: dlqTopic, Partition: 1, Offset: 9, Value: []byte(`{"a":5}`), Headers: []kgo.RecordHeader{
		h("ce-id", "evt-1"), h("ce-tenantid", "acme"), h("ce-id", "evt-other"),
		// what the republished copy carried from its first quarantine
		h("x-lerian-dlq-source-topic", "lerian.streaming.old"),
		h("x-lerian-dlq-source-partition", "7"),
		h("x-lerian-dlq-source-offset", "12345"),
		h("x-lerian-dlq-payload-omitted", "true"),
		h("x-lerian-dlq-cause-kind", "handler"),
		// this quarantine's, in lib-streaming's order
		h("x-lerian-dlq-source-topic", "lerian.streaming.ledger"),
		h("x-lerian-dlq-error-class", "broker_unavailable"),
		h("x-lerian-dlq-error-message", "streaming: missing required CloudEvents header: ce-type"),
		h("x-lerian-dlq-retry-count", "0"),
		h("x-lerian-dlq-first-failure-at", "2026-12-07T21:08:10.760689083Z"),
		h("x-lerian-dlq-producer-id", "ledger-consumer"),
		h("x-lerian-dlq-source-partition", "0"),
		h("x-lerian-dlq-source-offset", "4"),
		h("X-Lerian-DLQ-Cause-Kind", "codec"),
		h("x-lerian-dlq-payload-omitted", "false"),
	}}
	d := ingest.DLQRecordOf(r)
	if d.SourceTopic != "lerian.streaming.ledger" || d.SourcePartition == nil || *d.SourcePartition != 0 ||
		d.SourceOffset == nil || *d.SourceOffset != 4 || d.PayloadOmitted {
		t.Fatalf("source %q/%s/%s payload omitted %v: want lerian.streaming.ledger/0/4, false (the last headers)",
			d.SourceTopic, d.Headers["x-lerian-dlq-source-partition"], d.Headers["x-lerian-dlq-source-offset"], d.PayloadOmitted)
	}
	if d.Headers["x-lerian-dlq-cause-kind"] != "codec" || d.Headers["x-lerian-dlq-source-offset"] != "4" {
		t.Fatalf("headers kept: cause kind %q, source offset %q; want codec, 4",
			d.Headers["x-lerian-dlq-cause-kind"], d.Headers["x-lerian-dlq-source-offset"])
	}
	if d.CEID != "evt-1" || d.Headers["ce-id"] != "evt-1" || d.TenantID != "acme" {
		t.Fatalf("ce-id %q (headers %q), tenant %q: want the first ce-id, evt-1, and acme", d.CEID, d.Headers["ce-id"], d.TenantID)
	}
}
