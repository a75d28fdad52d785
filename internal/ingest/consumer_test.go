package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/ingest"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const topic = "lerian.streaming.ledger_transaction.posted"

// startConsumer runs a consumer until the test ends (or stop is called) and
// waits until it has joined its group.
// consumerConfig is the default configuration of a consumer of brokers
// into s, with its own metrics, in the group "streaming-hub.test".
func consumerConfig(brokers []string, s ingest.Persister) ingest.Config {
	cfg := ingest.Config{Ingest: config.Defaults(config.Serve).Ingest, Store: s, Metrics: metrics.New()}
	cfg.Brokers, cfg.Group = brokers, "streaming-hub.test"
	return cfg
}

// startConsumer runs a consumer with short retry waits until the test ends.
func startConsumer(t *testing.T, cfg ingest.Config) (c *ingest.Consumer, stop func()) {
	t.Helper()
	cfg.RetryMin, cfg.RetryMax = 10*time.Millisecond, 50*time.Millisecond
	c, err := ingest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	testkit.WaitFor(t, "consumer to join its group", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Ready(ctx) == nil
	})
	return c, stop
}

func tenants(t *testing.T, s store.Store, ids ...string) {
	t.Helper()
	for _, id := range ids {
		status := hub.TenantActive
		if id == "sleepy" {
			status = hub.TenantInactive
		}
		if _, err := s.CreateTenant(context.Background(), store.CreateTenantParams{ID: id, Name: id, Status: status}); err != nil {
			t.Fatal(err)
		}
	}
}

func inbox(t *testing.T, s store.Store, tenant string) []hub.Event {
	t.Helper()
	evs, err := s.ListEvents(context.Background(), store.ListEventsParams{TenantID: tenant, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func ids(evs []hub.Event) string {
	var s []string
	for _, ev := range evs {
		s = append(s, fmt.Sprintf("%s#%d", ev.ID, ev.Sequence))
	}
	return fmt.Sprint(s)
}

func TestConsumer_VerdictsInboxAndCounters(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		s := d.Open(t, store.Options{})
		tenants(t, s, "acme", "globex", "sleepy")
		kafka := testkit.Kafka(t, 1, topic)
		prod := testkit.Producer(t, kafka)
		cfg := consumerConfig(kafka.ListenAddrs(), s)
		m := cfg.Metrics
		startConsumer(t, cfg)

		salted := testkit.CERecord(topic, 0, "acme", "a-3")
		salted.Key = []byte("globex") // the key never decides tenancy
		malformed := testkit.CERecord(topic, 0, "acme", "bad-1")
		malformed.Headers = malformed.Headers[:3] // no ce-type onwards
		testkit.Produce(t, prod,
			testkit.CERecord(topic, 0, "acme", "a-1"),
			testkit.CERecord(topic, 0, "globex", "a-1"), // same ce-id, other tenant: not a duplicate
			testkit.CERecord(topic, 0, "acme", "a-2"),
			testkit.CERecord(topic, 0, "acme", "a-1"), // duplicate
			malformed,
			testkit.CERecord(topic, 0, "nobody", "n-1"),
			testkit.CERecord(topic, 0, "sleepy", "s-1"),
			salted,
		)
		testkit.WaitFor(t, "offset 8 committed", func() bool {
			return testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0] == 8
		})

		if got := ids(inbox(t, s, "acme")); got != "[a-1#1 a-2#2 a-3#3]" {
			t.Errorf("acme's inbox = %s", got)
		}
		if got := ids(inbox(t, s, "globex")); got != "[a-1#1]" {
			t.Errorf("globex's inbox = %s", got)
		}
		for _, tenant := range []string{"nobody", "sleepy"} {
			if got := inbox(t, s, tenant); len(got) != 0 {
				t.Errorf("%s's inbox = %s", tenant, ids(got))
			}
		}
		rej, err := s.ListRejections(context.Background(), store.ListRejectionsParams{})
		if err != nil || len(rej) != 1 {
			t.Fatalf("rejections = %+v, %v", rej, err)
		}
		if r := rej[0]; r.Reason != "missing ce-type" || r.Offset != 4 || r.CEID != "bad-1" || r.Headers["ce-source"] != "//midaz/ledger" {
			t.Errorf("rejection = %+v", r)
		}
		want := map[[2]string]float64{
			{"accept", "accepted"}:           4,
			{"discard", "duplicate"}:         1,
			{"discard", "unknown_tenant"}:    1,
			{"discard", "inactive_tenant"}:   1,
			{"reject", "missing ce-type"}:    1,
			{"reject", "ce-type must be at"}: 0,
		}
		for labels, n := range want {
			if got := testutil.ToFloat64(m.IngestRecords.WithLabelValues(labels[0], labels[1])); got != n {
				t.Errorf("ingest_records_total{verdict=%q,reason=%q} = %v, want %v", labels[0], labels[1], got, n)
			}
		}
	})
}

// failingStore fails every batch of one partition while failing is set: a
// database that is down for that partition's transactions only.
type failingStore struct {
	store.Store
	partition int32
	failing   atomic.Bool
	attempts  atomic.Int64
}

func (f *failingStore) Ingest(ctx context.Context, p store.IngestParams) (store.IngestResult, error) {
	for _, ev := range p.Events {
		if ev.Partition == f.partition && f.failing.Load() {
			f.attempts.Add(1)
			return store.IngestResult{}, errors.New("injected: database unavailable")
		}
	}
	return f.Store.Ingest(ctx, p)
}

func TestConsumer_FailingPartitionRetriesAloneAndIsNeverCommitted(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		s := &failingStore{Store: d.Open(t, store.Options{}), partition: 1}
		s.failing.Store(true)
		tenants(t, s, "acme", "globex")
		kafka := testkit.Kafka(t, 2, topic)
		prod := testkit.Producer(t, kafka)
		cfg := consumerConfig(kafka.ListenAddrs(), s)
		cfg.MaxBatch = 7
		clock := testkit.NewClock()
		cfg.Now = clock.Now
		c, _ := startConsumer(t, cfg)

		var recs []*kgo.Record
		for i := range 20 {
			recs = append(recs,
				testkit.CERecord(topic, 0, "acme", fmt.Sprintf("p0-%02d", i)),
				testkit.CERecord(topic, 1, "globex", fmt.Sprintf("p1-%02d", i)))
		}
		testkit.Produce(t, prod, recs...)

		testkit.WaitFor(t, "partition 0 committed while partition 1 fails", func() bool {
			return testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0] == 20 && s.attempts.Load() >= 3
		})
		if got := len(inbox(t, s, "acme")); got != 20 {
			t.Fatalf("healthy partition persisted %d of 20", got)
		}
		if got := len(inbox(t, s, "globex")); got != 0 {
			t.Fatalf("failing partition wrote %d events", got)
		}
		if off, ok := testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[1]; ok {
			t.Fatalf("failing partition committed offset %d", off)
		}
		// Readiness: failing for StallAfter (10 s) is a transient; longer is a stall
		// /readyz reports as the check named ingest.
		clock.Advance(cfg.StallAfter)
		if err := c.Stalled(context.Background()); err != nil {
			t.Fatalf("stalled after exactly StallAfter: %v", err)
		}
		checkStallGauge(t, cfg, 0, 0)
		clock.Advance(time.Second)
		if err := c.Stalled(context.Background()); err == nil || !strings.Contains(err.Error(), topic+"/1 has failed to persist") {
			t.Fatalf("stall check after %s of failures: %v", cfg.StallAfter+time.Second, err)
		}
		checkStallGauge(t, cfg, 0, 1)
		// The next failed retry keeps it at 1, without a readiness check.
		n := s.attempts.Load()
		testkit.WaitFor(t, "another failed attempt", func() bool { return s.attempts.Load() > n })
		checkStallGauge(t, cfg, 0, 1)

		s.failing.Store(false) // the database comes back
		testkit.WaitFor(t, "partition 1 committed after recovery", func() bool {
			return testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[1] == 20
		})
		checkStallGauge(t, cfg, 0, 0) // the batch that persisted cleared it
		if err := c.Stalled(context.Background()); err != nil {
			t.Fatalf("stall check after recovery: %v", err)
		}
		checkStallGauge(t, cfg, 0, 0)
		got := inbox(t, s, "globex")
		if len(got) != 20 {
			t.Fatalf("after recovery globex has %d events, want 20 exactly once", len(got))
		}
		for i, ev := range got {
			if want := fmt.Sprintf("p1-%02d", i); ev.ID != want || ev.Sequence != int64(i+1) {
				t.Fatalf("event %d = %s#%d, want %s#%d (in order, once)", i, ev.ID, ev.Sequence, want, i+1)
			}
		}
	})
}

func TestConsumer_GracefulStopCommitsWhatWasPersisted(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		s := d.Open(t, store.Options{})
		tenants(t, s, "acme")
		kafka := testkit.Kafka(t, 1, topic)
		prod := testkit.Producer(t, kafka)
		_, stop := startConsumer(t, consumerConfig(kafka.ListenAddrs(), s))
		testkit.Produce(t, prod, testkit.CERecord(topic, 0, "acme", "1"), testkit.CERecord(topic, 0, "acme", "2"))
		testkit.WaitFor(t, "two events in the inbox", func() bool { return len(inbox(t, s, "acme")) == 2 })
		stop()
		if got := testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0]; got != 2 {
			t.Fatalf("committed offset after stop = %d, want 2", got)
		}

		// A second member of the group starts where the first stopped.
		testkit.Produce(t, prod, testkit.CERecord(topic, 0, "acme", "3"))
		startConsumer(t, consumerConfig(kafka.ListenAddrs(), s))
		testkit.WaitFor(t, "third event", func() bool { return len(inbox(t, s, "acme")) == 3 })
		if got := ids(inbox(t, s, "acme")); got != "[1#1 2#2 3#3]" {
			t.Fatalf("inbox = %s", got)
		}
	})
}

func TestConsumer_NeverReadsCommandOrDeadLetterTopics(t *testing.T) {
	s := testkit.OpenSQLite(t, store.Options{})
	tenants(t, s, "acme")
	kafka := testkit.Kafka(t, 1, topic, "lerian.streaming.ledger.commands", "lerian.streaming.ledger_transaction.dlq", "other.namespace.events")
	prod := testkit.Producer(t, kafka)
	testkit.Produce(t, prod,
		testkit.CERecord("lerian.streaming.ledger.commands", 0, "acme", "cmd"),
		testkit.CERecord("lerian.streaming.ledger_transaction.dlq", 0, "acme", "dlq"),
		testkit.CERecord("other.namespace.events", 0, "acme", "other"),
		testkit.CERecord(topic, 0, "acme", "event"),
	)
	c, _ := startConsumer(t, consumerConfig(kafka.ListenAddrs(), s))
	testkit.WaitFor(t, "the event", func() bool { return len(inbox(t, s, "acme")) >= 1 })
	// Every topic exists and was seen by the metadata that found ours: the
	// subscription is exactly the one topic, nothing else will be read.
	if got := fmt.Sprint(c.Client().GetConsumeTopics()); got != "["+topic+"]" {
		t.Fatalf("consuming %s", got)
	}
	if got := ids(inbox(t, s, "acme")); got != "[event#1]" {
		t.Fatalf("inbox = %s: the consumer read an excluded topic", got)
	}
}

// TestConsumer_HostileRecordsNeverBlockTheirPartition: records whose headers
// carry NUL, invalid UTF-8, control characters and 200 KB names, through a
// real broker: each is rejected (or its foreign headers ignored) with a
// bounded reason, the metric labels stay few, and the valid record behind
// them on the same partition is accepted and committed.
func TestConsumer_HostileRecordsNeverBlockTheirPartition(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		s := d.Open(t, store.Options{})
		tenants(t, s, "acme")
		kafka := testkit.Kafka(t, 1, topic)
		prod := testkit.Producer(t, kafka)
		cfg := consumerConfig(kafka.ListenAddrs(), s)
		startConsumer(t, cfg)

		huge := strings.Repeat("n", 200<<10)
		h := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
		var recs []*kgo.Record
		recs = append(recs,
			testkit.CERecord(topic, 0, "acme", "nul-name", h("ce-bad\x00nul", "a"), h("ce-bad\x00nul", "b")),
			testkit.CERecord(topic, 0, "acme", "foreign", h("x-bad\x00nul", "a"), h("x-bad\x00nul", "b")), // ignored: accepted
			testkit.CERecord(topic, 0, "acme", "huge", h("ce-"+huge, "a"), h("ce-"+huge, "b")),
			testkit.CERecord(topic, 0, "acme", "utf8", h("ce-\xff\xfe", "\xff")),
			testkit.CERecord(topic, 0, "acme", "ctl\x00\x01id"),
		)
		for i := range 50 { // a random header name each: the labels must not grow
			recs = append(recs, testkit.CERecord(topic, 0, "acme", fmt.Sprintf("rnd-%d", i),
				h(fmt.Sprintf("ce-x%dy_%d", i, i), "a"), h(fmt.Sprintf("ce-x%dy_%d", i, i), "b")))
		}
		recs = append(recs, testkit.CERecord(topic, 0, "acme", "valid-after"))
		testkit.Produce(t, prod, recs...)
		testkit.WaitFor(t, "every record committed", func() bool {
			return testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0] == int64(len(recs))
		})
		if got := ids(inbox(t, s, "acme")); got != "[foreign#1 valid-after#2]" {
			t.Fatalf("inbox = %s", got)
		}
		rej, err := s.ListRejections(context.Background(), store.ListRejectionsParams{Limit: 100})
		if err != nil || len(rej) != len(recs)-2 {
			t.Fatalf("%d rejections (want %d), %v", len(rej), len(recs)-2, err)
		}
		for _, r := range rej {
			if !utf8.ValidString(r.Reason) || strings.ContainsRune(r.Reason, 0) || len(r.Reason) > 200 {
				t.Fatalf("stored reason %q", r.Reason)
			}
		}
		if n := testutil.CollectAndCount(cfg.Metrics.IngestRecords); n > 12 {
			t.Fatalf("streaming_hub_ingest_records_total has %d series after hostile records", n)
		}
	})
}

// checkStallGauge checks streaming_hub_ingest_partition_stalled of the
// test topic's partitions 0 and 1 (docs/lerian-platform.md).
func checkStallGauge(t *testing.T, cfg ingest.Config, p0, p1 float64) {
	t.Helper()
	for p, want := range []float64{p0, p1} {
		if got := testutil.ToFloat64(cfg.Metrics.PartitionStalled.WithLabelValues(topic, fmt.Sprint(p))); got != want {
			t.Errorf("streaming_hub_ingest_partition_stalled{topic=%q,partition=\"%d\"} = %v, want %v", topic, p, got, want)
		}
	}
}

// slowFailingStore's first failed write of the failing partition takes
// took of the clock before the database refuses it.
type slowFailingStore struct {
	failingStore
	clock *testkit.Clock
	took  time.Duration
	once  sync.Once
}

func (f *slowFailingStore) Ingest(ctx context.Context, p store.IngestParams) (store.IngestResult, error) {
	res, err := f.failingStore.Ingest(ctx, p)
	if err != nil {
		f.once.Do(func() { f.clock.Advance(f.took) })
	}
	return res, err
}

// Readiness counts a stall from the start of the first write the database
// refused, not from when its error came back: a write that took 4 s to fail
// makes the hub unready StallAfter after it began (docs/operations.md).
func TestConsumer_StallCountsFromTheStartOfTheFirstFailedWrite(t *testing.T) {
	testkit.Long(t)
	clock := testkit.NewClock()
	s := &slowFailingStore{failingStore: failingStore{Store: testkit.OpenSQLite(t, store.Options{}), partition: 0}, clock: clock, took: 4 * time.Second}
	s.failing.Store(true)
	tenants(t, s, "acme")
	kafka := testkit.Kafka(t, 1, topic)
	prod := testkit.Producer(t, kafka)
	cfg := consumerConfig(kafka.ListenAddrs(), s)
	cfg.Now = clock.Now
	c, _ := startConsumer(t, cfg)
	testkit.Produce(t, prod, testkit.CERecord(topic, 0, "acme", "e-1"))
	testkit.WaitFor(t, "a failed write", func() bool { return s.attempts.Load() >= 1 })
	clock.Advance(cfg.StallAfter - s.took + time.Millisecond)
	if err := c.Stalled(context.Background()); err == nil {
		t.Fatalf("%v after the first failed write began (it took %v to fail), readiness still passes", cfg.StallAfter+time.Millisecond, s.took)
	}
}
