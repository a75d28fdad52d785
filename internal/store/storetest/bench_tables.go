package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// BenchTenants is how many tenants BenchTables spreads its work over; each
// has one subscription to transaction.posted v1, sub_<tenant>.
const BenchTenants = 100

// BenchTenant names the i-th tenant of BenchTables.
func BenchTenant(i int) string { return fmt.Sprintf("t%03d", i) }

// BenchTables measures what must stay fast as the tables grow, on a store
// that may already hold any number of rows (a driver's large-table
// benchmark fills it first): ingest with dedup against every stored ce-id
// and matching, claim and complete, a pull page from the middle of a
// tenant's history, and a retention batch. Compare a run on an empty store
// with one on a full store; history is how many events each tenant already
// has (pull pages start anywhere in it).
func BenchTables(b *testing.B, s store.Store, history int64) {
	ctx := context.Background()
	if err := BenchSetup(ctx, s); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 512)
	for i := range payload {
		payload[i] = 'a' + byte(i%26)
	}
	// Random ce-ids, as UUIDs would be: each insert lands anywhere in the
	// dedup index.
	events := func(n int) []hub.Event {
		evs := make([]hub.Event, n)
		for i := range evs {
			var id [16]byte
			rand.Read(id[:])
			evs[i] = NewEvent(BenchTenant(i%BenchTenants), hex.EncodeToString(id[:]))
			evs[i].Data = payload
		}
		return evs
	}
	ingest := func(b *testing.B, evs []hub.Event) {
		for start := 0; start < len(evs); start += 500 {
			if _, err := s.Ingest(ctx, store.IngestParams{Events: evs[start:min(start+500, len(evs))]}); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Whatever earlier runs left pending is delivered first, untimed.
	drain(b, s)

	b.Run("ingest", func(b *testing.B) {
		evs := events(b.N)
		b.ResetTimer()
		ingest(b, evs)
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		drain(b, s)
	})
	b.Run("claim+complete", func(b *testing.B) {
		ingest(b, events(b.N))
		b.ResetTimer()
		n := drain(b, s)
		b.StopTimer()
		b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "jobs/s")
	})
	b.Run("pull-page", func(b *testing.B) {
		page, err := s.ListEvents(ctx, store.ListEventsParams{TenantID: BenchTenant(42), Limit: 1})
		if err != nil || len(page) == 0 {
			b.Fatalf("no events to pull: %v", err)
		}
		first := page[0].Sequence
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			after := first + mrand.Int64N(max(history-100, 1))
			if _, err := s.ListEvents(ctx, store.ListEventsParams{TenantID: BenchTenant(i % BenchTenants), After: after, Limit: 100}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
	})
	// Health is read from rollups and the backlog's partial indexes: its
	// cost must not grow with the attempt log.
	b.Run("health", func(b *testing.B) {
		now := time.Now()
		for i := 0; i < b.N; i++ {
			sub := "sub_" + BenchTenant(i%BenchTenants)
			rs, err := s.ListRollups(ctx, sub, store.HealthFrom(now, 720*time.Hour))
			if err != nil {
				b.Fatal(err)
			}
			store.Summarize(rs, now, 720*time.Hour)
			if _, err := s.Backlog(ctx, sub); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
	})
	b.Run("deliveries-search", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := s.SearchJobs(ctx, store.SearchJobsParams{TenantID: BenchTenant(i % BenchTenants), Limit: 51}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
	})
	b.Run("prune", func(b *testing.B) {
		deleted := 0
		p := store.PruneParams{SucceededBefore: time.Now(), Batch: 1000}
		for deleted < b.N {
			r, err := s.Prune(ctx, p)
			if err != nil {
				b.Fatal(err)
			}
			if r.SucceededJobs == 0 {
				b.Skipf("only %d succeeded jobs to prune", deleted)
			}
			deleted += r.SucceededJobs
		}
		b.ReportMetric(float64(deleted)/b.Elapsed().Seconds(), "jobs/s")
	})
}

// BenchSetup creates BenchTables' tenants and subscriptions unless they
// exist.
func BenchSetup(ctx context.Context, s store.Store) error {
	for i := range BenchTenants {
		id := BenchTenant(i)
		if _, err := s.CreateTenant(ctx, store.CreateTenantParams{ID: id, Name: id}); err != nil && hub.ErrorCode(err) != hub.ECONFLICT {
			return err
		}
		sub := NewSubscription(id, "sub_"+id)
		sub.VerificationState, sub.MaxInFlight = hub.VerificationActive, 1
		if _, err := s.CreateSubscription(ctx, sub); err != nil && hub.ErrorCode(err) != hub.ECONFLICT {
			return err
		}
	}
	return nil
}

// drain claims and completes (as succeeded) every due job, with two
// completers handing off as the dispatcher's do, and returns how many.
func drain(b *testing.B, s store.Store) int {
	ctx := context.Background()
	// At most one job per subscription is in flight, so at most
	// BenchTenants batches: the buffer never blocks a completer.
	results := make(chan []store.Claimed, 2*BenchTenants)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done, inflight := 0, 0
	complete := func(batch []store.Claimed) ([]store.Claimed, error) {
		cs := make([]store.Completion, len(batch))
		now := time.Now()
		for i, c := range batch {
			cs[i] = store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobSucceeded,
				SubscriptionID: c.Job.SubscriptionID,
				Attempt:        &hub.Attempt{ID: hub.NewID("att", now), StartedAt: now, StatusCode: 200, Duration: time.Millisecond}}
		}
		res, err := s.CompleteJobs(ctx, store.CompleteParams{Completions: cs, Next: &store.ClaimParams{Batch: 64, Lease: time.Minute}})
		return res.Claimed, err
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for batch := range results {
				next, err := complete(batch)
				if err != nil {
					b.Error(err)
				}
				mu.Lock()
				done += len(batch)
				inflight += len(next) - len(batch)
				mu.Unlock()
				if len(next) > 0 {
					results <- next
				}
			}
		}()
	}
	for {
		c, err := s.ClaimJobs(ctx, store.ClaimParams{Batch: 64, Lease: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		inflight += len(c)
		idle := inflight == 0
		mu.Unlock()
		if len(c) == 0 {
			if idle {
				break
			}
			time.Sleep(time.Millisecond)
			continue
		}
		for start := 0; start < len(c); start += 16 {
			results <- c[start:min(start+16, len(c))]
		}
	}
	close(results)
	wg.Wait()
	return done
}
