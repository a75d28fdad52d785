package ingest_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	hub "github.com/lerianstudio/streaming-hub"

	"github.com/lerianstudio/streaming-hub/internal/ingest"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// gatedStore persists nothing until open is closed, then accepts every
// event and keeps the offsets it was given, in the order given.
type gatedStore struct {
	open chan struct{}

	mu      sync.Mutex
	offsets []int64
}

func (g *gatedStore) Ingest(ctx context.Context, p store.IngestParams) (store.IngestResult, error) {
	select {
	case <-g.open:
	case <-ctx.Done():
		return store.IngestResult{}, ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	res := store.IngestResult{Outcomes: make([]store.Outcome, len(p.Events))}
	for i, ev := range p.Events {
		g.offsets = append(g.offsets, ev.Offset)
		res.Outcomes[i] = store.Outcome{Verdict: hub.Accept, Sequence: int64(len(g.offsets))}
	}
	return res, nil
}

// One tenant's busy partition among idle ones (docs/performance.md): its
// backlog pauses its fetching, and once resumed it is fetched only after
// the fetch in flight to its broker returns, a fetch of the idle
// partitions alone, which the broker holds until its MaxWait passes. At
// franz-go's 5s every resume cost that long (~850 events/s); Kafka's own
// consumer asks for 500ms. The fetches sent while the partition was
// paused must ask for no more, and the partition's records are still all
// persisted in order and committed.
func TestConsumer_AResumedPartitionWaitsOnlyAShortFetchOfTheIdleOnes(t *testing.T) {
	const partitions, records = 8, 100
	kafka := testkit.Kafka(t, partitions, topic)
	prod := testkit.Producer(t, kafka)
	g := &gatedStore{open: make(chan struct{})}
	cfg := consumerConfig(kafka.ListenAddrs(), g)
	cfg.MaxBatch, cfg.MaxBacklog = 10, 20

	var c *ingest.Consumer
	var ready atomic.Bool
	var mu sync.Mutex
	var whilePaused []int32 // MaxWaitMillis of the fetches sent while partition 0 was paused
	kafka.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kafka.KeepControl()
		if ready.Load() && slices.Contains(c.Client().PauseFetchPartitions(nil)[topic], 0) {
			mu.Lock()
			whilePaused = append(whilePaused, req.(*kmsg.FetchRequest).MaxWaitMillis)
			mu.Unlock()
		}
		return nil, nil, false
	})
	c, _ = startConsumer(t, cfg)
	ready.Store(true)

	var recs []*kgo.Record
	for i := range records {
		recs = append(recs, testkit.CERecord(topic, 0, "acme", fmt.Sprintf("e-%d", i)))
	}
	testkit.Produce(t, prod, recs...)
	testkit.WaitFor(t, "a fetch sent while partition 0 is paused for its backlog", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(whilePaused) > 0
	})
	close(g.open)
	testkit.WaitFor(t, "every record committed", func() bool {
		return testkit.CommittedOffsets(t, prod, cfg.Group, topic)[0] == records
	})

	mu.Lock()
	defer mu.Unlock()
	for _, ms := range whilePaused {
		if ms > 500 {
			t.Fatalf("fetches sent while the partition was paused waited up to %v ms at the broker, want at most 500: its resume waits behind them", whilePaused)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, off := range g.offsets {
		if off != int64(i) {
			t.Fatalf("persisted offsets %v, want 0..%d in order", g.offsets, records-1)
		}
	}
	if len(g.offsets) != records {
		t.Fatalf("%d records persisted, want %d", len(g.offsets), records)
	}
}
