package storetest

import (
	"fmt"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// BenchIngest measures ingest persistence: records/s through Ingest, one
// partition's batch per transaction, dedup on, for several batch sizes. A
// realistic mix: 10 tenants interleaved, ~1 KiB payloads, and every 100th
// record a duplicate of one already stored.
//
//	go test ./store/postgres -run '^$' -bench Ingest -benchtime 20000x
func BenchIngest(b *testing.B, open Opener) {
	for _, size := range []int{1, 10, 100, 500, 1000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			e := setup(b, open, store.Options{})
			const tenants = 10
			for i := range tenants {
				e.tenant(b, fmt.Sprintf("tenant-%d", i), "")
			}
			events := ingestMix(b.N, tenants)
			b.SetBytes(int64(len(events[0].Data)))
			b.ResetTimer()
			accepted := 0
			for start := 0; start < len(events); start += size {
				res, err := e.store.Ingest(e.ctx, store.IngestParams{Events: events[start:min(start+size, len(events))]})
				if err != nil {
					b.Fatal(err)
				}
				for _, o := range res.Outcomes {
					if o.Verdict == hub.Accept {
						accepted++
					}
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			if want := b.N - b.N/100; accepted < want-1 || accepted > want+1 {
				b.Fatalf("accepted %d of %d: dedup is wrong", accepted, b.N)
			}
		})
	}
}

// BenchIngestFilters measures what filters cost ingest: the mix of
// BenchIngest at batch=500, with 10 deliverable subscriptions per tenant to
// the events' type (10 jobs per event), first without filters, then with
// 3 filters each (6 expressions) that every event satisfies, so both write
// the same jobs and the difference is the filters' reading and matching.
//
//	go test ./internal/store/postgres -run '^$' -bench IngestFilters -benchtime 5000x -count 5
func BenchIngestFilters(b *testing.B, open Opener) {
	const filters = `[{"prefix":{"source":"//midaz/"}},{"not":{"exact":{"subject":"nobody"}}},` +
		`{"any":[{"suffix":{"type":".posted"}},{"exact":{"resourcetype":"transaction"}}]}]`
	for _, withFilters := range []bool{false, true} {
		name := "subs=10/filters=0"
		if withFilters {
			name = "subs=10/filters=3"
		}
		b.Run(name, func(b *testing.B) {
			e := setup(b, open, store.Options{})
			const tenants, subs, size = 10, 10, 500
			for i := range tenants {
				tenant := fmt.Sprintf("tenant-%d", i)
				e.tenant(b, tenant, "")
				for j := range subs {
					s := NewSubscription(tenant, fmt.Sprintf("sub-%d-%d", i, j))
					s.VerificationState = hub.VerificationActive
					if withFilters {
						s.Filters, _ = hub.ParseFilters([]byte(filters))
					}
					if _, err := e.store.CreateSubscription(e.ctx, s); err != nil {
						b.Fatal(err)
					}
				}
			}
			events := ingestMix(b.N, tenants)
			b.SetBytes(int64(len(events[0].Data)))
			b.ResetTimer()
			jobs := 0
			for start := 0; start < len(events); start += size {
				res, err := e.store.Ingest(e.ctx, store.IngestParams{Events: events[start:min(start+size, len(events))]})
				if err != nil {
					b.Fatal(err)
				}
				jobs += res.Jobs
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
			if want := (b.N - b.N/100) * subs; jobs < want-subs || jobs > want+subs {
				b.Fatalf("%d jobs for %d records: matching is wrong", jobs, b.N)
			}
		})
	}
}

// ingestMix is BenchIngest's realistic mix of n records: tenants
// interleaved, ~1 KiB payloads, every 100th record a redelivery of one
// already sent.
func ingestMix(n, tenants int) []hub.Event {
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}
	events := make([]hub.Event, n)
	for i := range events {
		id := i
		if i%100 == 99 {
			id = i - 50 // a redelivery
		}
		events[i] = NewEvent(fmt.Sprintf("tenant-%d", id%tenants), fmt.Sprintf("evt-%09d", id))
		events[i].Data = payload
		events[i].Offset = int64(i)
	}
	return events
}
