package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// BenchDispatch measures the store side of delivery: jobs/s through claim
// and completion (with the hand-off to each subscription's next job), with
// no HTTP and no Kafka, for 100 tenants with one subscription each.
//
//	go test ./store/postgres -run '^$' -bench Dispatch -benchtime 20000x
func BenchDispatch(b *testing.B, open Opener) {
	e := setup(b, open, store.Options{})
	const tenants = 100
	for i := range tenants {
		id := fmt.Sprintf("t%03d", i)
		e.tenant(b, id, "")
		e.subscribe(b, id, "sub_"+id, 1)
	}
	var evs []hub.Event
	for n := 0; len(evs) < b.N; n++ {
		for i := 0; i < tenants && len(evs) < b.N; i++ {
			evs = append(evs, NewEvent(fmt.Sprintf("t%03d", i), fmt.Sprintf("e-%07d", n)))
		}
	}
	for start := 0; start < len(evs); start += 1000 {
		e.ingest(b, store.IngestParams{Events: evs[start:min(start+1000, len(evs))]})
	}
	b.ResetTimer()
	var done sync.WaitGroup
	results := make(chan []store.Claimed, 16)
	var mu sync.Mutex
	delivered := 0
	// Two completers hand off, as the dispatcher's do.
	for range 2 {
		done.Add(1)
		go func() {
			defer done.Done()
			for batch := range results {
				cs := make([]store.Completion, len(batch))
				for i, c := range batch {
					cs[i] = e.succeeded(c)
				}
				res, err := e.store.CompleteJobs(e.ctx, store.CompleteParams{Completions: cs, Next: &store.ClaimParams{Batch: 64, Lease: time.Minute}})
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				delivered += len(batch)
				finished := delivered >= b.N
				mu.Unlock()
				if finished {
					return
				}
				if len(res.Claimed) > 0 {
					results <- res.Claimed
				}
			}
		}()
	}
	for claimed := 0; claimed < min(tenants, b.N); {
		c, err := e.store.ClaimJobs(e.ctx, store.ClaimParams{Batch: 64, Lease: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		claimed += len(c)
		for start := 0; start < len(c); start += 16 {
			results <- c[start:min(start+16, len(c))]
		}
	}
	for {
		mu.Lock()
		finished := delivered >= b.N
		mu.Unlock()
		if finished {
			break
		}
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	close(results)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
