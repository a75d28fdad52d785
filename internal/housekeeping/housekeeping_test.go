package housekeeping_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/housekeeping"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// newConfig is the default configuration over s, with its own metrics.
func newConfig(s housekeeping.Store) housekeeping.Config {
	return housekeeping.Config{Housekeeping: config.Defaults(config.Serve).Housekeeping, Store: s, Metrics: metrics.New()}
}

func newHousekeeper(t *testing.T, cfg housekeeping.Config) *housekeeping.Housekeeper {
	t.Helper()
	h, err := housekeeping.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A pass works a backlog off in batches, within the bounds, and samples
// the job counts.
func TestPass_DeletesPastRetentionInBatchesAndCountsJobs(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ctx := context.Background()
		clock := testkit.NewClock()
		s := d.Open(t, store.Options{Now: clock.Now})
		s.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"})
		sub := storetest.NewSubscription("acme", "sub_1")
		sub.VerificationState = hub.VerificationActive
		if _, err := s.CreateSubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		var old []hub.Event
		for _, id := range []string{"1", "2", "3", "4", "5"} {
			ev := storetest.NewEvent("acme", id)
			ev.EventType, ev.Type = "balance.created", "studio.lerian.balance.created" // no subscriber: no job
			old = append(old, ev)
		}
		old = append(old, storetest.NewEvent("acme", "wanted")) // a job: pending
		if _, err := s.Ingest(ctx, store.IngestParams{Events: old}); err != nil {
			t.Fatal(err)
		}
		// Past the week the bound falls in: on PostgreSQL retention works
		// by whole weeks (docs/performance.md), and the old week is kept (the
		// pending job needs its event) with its other rows deleted one by
		// one.
		clock.Advance(15 * 24 * time.Hour)
		if _, err := s.Ingest(ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", "new")}}); err != nil {
			t.Fatal(err)
		}

		cfg := newConfig(s)
		cfg.Now, cfg.Batch = clock.Now, 2
		m := cfg.Metrics
		h := newHousekeeper(t, cfg)
		ran, deleted, err := h.Pass(ctx)
		deleted.Partitions = 0 // the jobs' week may go whole, depending on where the process's ids are
		if !ran || err != nil || deleted != (store.PruneResult{Events: 5}) {
			t.Fatalf("Pass = %v, %+v, %v; want the 5 old jobless events, in batches of 2", ran, deleted, err)
		}
		evs, _ := s.ListEvents(ctx, store.ListEventsParams{TenantID: "acme", Limit: 10})
		if len(evs) != 2 || evs[0].ID != "wanted" || evs[1].ID != "new" {
			t.Fatalf("events left: %+v", evs)
		}
		if got := testutil.ToFloat64(m.RetentionDeleted.WithLabelValues("events")); got != 5 {
			t.Fatalf("retention_deleted_total{kind=events} = %v", got)
		}
		if got := testutil.ToFloat64(m.Jobs.WithLabelValues("pending")); got != 2 {
			t.Fatalf("jobs{status=pending} = %v, want 2", got)
		}
	})
}

// countingStore records how many Prune calls overlap. The first Prune
// waits until a pass was skipped, so the replicas contend whatever the
// machine's speed (a fixed pause would only make it likely).
type countingStore struct {
	store.Store
	overlap *testkit.Overlap
}

func (c countingStore) Prune(ctx context.Context, p store.PruneParams) (store.PruneResult, error) {
	defer c.overlap.Enter()()
	return c.Store.Prune(ctx, p)
}

// Two replicas (two handles on one database) passing at the same time:
// the lock lets one prune at a time, the other skips, and the skipping one
// drops its job counts rather than export stale ones.
func TestPass_OneReplicaAtATime(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		a, b := testkit.OpenTwice(t, d.Name, store.Options{})
		var ran, skipped atomic.Int32
		overlap := testkit.NewOverlap()
		var ms []*metrics.Metrics
		var wg sync.WaitGroup
		for _, s := range []store.Store{a, b} {
			cfg := newConfig(countingStore{s, overlap})
			ms = append(ms, cfg.Metrics)
			h := newHousekeeper(t, cfg)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 30 {
					r, _, err := h.Pass(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					if r {
						ran.Add(1)
					} else {
						skipped.Add(1)
						overlap.Contend()
					}
				}
			}()
		}
		wg.Wait()
		if most := overlap.Most(); most != 1 {
			t.Fatalf("%d passes pruned at once, want 1", most)
		}
		if ran.Load() == 0 || skipped.Load() == 0 {
			t.Fatalf("ran %d, skipped %d: the replicas never contended", ran.Load(), skipped.Load())
		}
		for i, m := range ms {
			passes := testutil.ToFloat64(m.HousekeepingPasses.WithLabelValues("ran")) + testutil.ToFloat64(m.HousekeepingPasses.WithLabelValues("skipped"))
			if passes != 30 {
				t.Fatalf("replica %d counted %v passes, want 30", i, passes)
			}
		}
		t.Logf("ran %d, skipped %d", ran.Load(), skipped.Load())
	})
}

// A package receives a complete configuration: a zero setting is a
// programming error that names the field, never a silent default.
func TestNew_AnIncompleteConfigNamesTheField(t *testing.T) {
	for field, zero := range map[string]func(*housekeeping.Config){
		"Metrics":        func(c *housekeeping.Config) { c.Metrics = nil },
		"Interval":       func(c *housekeeping.Config) { c.Interval = 0 },
		"DLQRetention":   func(c *housekeeping.Config) { c.DLQRetention = 0 },
		"InboxRetention": func(c *housekeeping.Config) { c.InboxRetention = 0 },
		"JobRetention":   func(c *housekeeping.Config) { c.JobRetention = 0 },
		"Batch":          func(c *housekeeping.Config) { c.Batch = 0 },
		"Budget":         func(c *housekeeping.Config) { c.Budget = 0 },
	} {
		c := newConfig(struct{ housekeeping.Store }{})
		zero(&c)
		if _, err := housekeeping.New(c); err == nil || !strings.Contains(err.Error(), "housekeeping.Config: "+field+" ") {
			t.Errorf("%s unset: err = %v, want one naming it", field, err)
		}
	}
}

// Health rollups older than the health window are pruned by a pass.
func TestPass_PrunesRollupsPastTheHealthWindow(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ctx := context.Background()
		clock := testkit.NewClock()
		s := d.Open(t, store.Options{Now: clock.Now})
		s.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"})
		sub := storetest.NewSubscription("acme", "sub_1")
		sub.VerificationState, sub.MaxInFlight = hub.VerificationActive, 10
		if _, err := s.CreateSubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		complete := func(id string) {
			if _, err := s.Ingest(ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", id)}}); err != nil {
				t.Fatal(err)
			}
			cs, err := s.ClaimJobs(ctx, store.ClaimParams{Batch: 10, Lease: time.Minute})
			if err != nil || len(cs) != 1 {
				t.Fatalf("claimed %d, %v", len(cs), err)
			}
			now := clock.Now()
			if _, err := s.CompleteJobs(ctx, store.CompleteParams{Completions: []store.Completion{{
				JobLease: store.JobLease{JobID: cs[0].Job.ID, LeaseToken: cs[0].LeaseToken}, Status: hub.JobSucceeded,
				SubscriptionID: "sub_1", Attempt: &hub.Attempt{ID: hub.NewID("att", now), StartedAt: now, StatusCode: 200},
			}}}); err != nil {
				t.Fatal(err)
			}
		}
		complete("old")
		clock.Advance(20 * 24 * time.Hour)
		complete("recent")
		cfg := newConfig(s)
		cfg.Now, cfg.HealthWindow = clock.Now, 10*24*time.Hour
		if _, _, err := newHousekeeper(t, cfg).Pass(ctx); err != nil {
			t.Fatal(err)
		}
		rs, err := s.ListRollups(ctx, "sub_1", time.Time{})
		if err != nil || len(rs) != 1 || rs[0].Successes != 1 || rs[0].Start.Before(clock.Now().Add(-time.Hour)) {
			t.Fatalf("rollups left %+v, %v; want the recent one only", rs, err)
		}
	})
}

// The partitions pass makes the weeks ahead on PostgreSQL (Migrate made
// this week and the next), once whichever replica runs it; SQLite has none
// to make.
func TestPartitions_MakesTheWeeksAheadOnce(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ctx := context.Background()
		clock := testkit.NewClock()
		s := d.Open(t, store.Options{Now: clock.Now})
		cfg := newConfig(s)
		cfg.Now = clock.Now
		h := newHousekeeper(t, cfg)
		ran, made, err := h.Partitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := s.(store.Partitioner); !ok {
			if ran || made != 0 {
				t.Fatalf("Partitions = %v, %d on a store without partitions", ran, made)
			}
			return
		}
		// Weeks 3 to 5 from now, in three tables.
		if !ran || made != 9 {
			t.Fatalf("Partitions = %v, %d; want 3 weeks of events, jobs and attempts", ran, made)
		}
		if ran, made, err := h.Partitions(ctx); !ran || made != 0 || err != nil {
			t.Fatalf("again: %v, %d, %v; want nothing to make", ran, made, err)
		}
		if n := rowsOf(t, s, "events_w20261228"); n != 0 {
			t.Fatalf("events_w20261228: %d rows", n)
		}
	})
}

func rowsOf(t *testing.T, s store.Store, table string) int64 {
	t.Helper()
	n, err := s.(storetest.Rows).CountRows(context.Background(), table)
	if err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	return n
}

// pruneParams records what each Prune was asked.
type pruneParams struct {
	store.Store
	got *[]store.PruneParams
}

func (p pruneParams) Prune(ctx context.Context, params store.PruneParams) (store.PruneResult, error) {
	*p.got = append(*p.got, params)
	return p.Store.Prune(ctx, params)
}

// STREAMING_HUB_PARTITION_RETENTION_ENABLED: by default retention works by
// whole partitions on PostgreSQL, as before the variable; false (Lerian's
// chart) drops none and deletes rows; PARTITION_RETENTION_HORIZON then
// keeps events that long instead of INBOX_RETENTION, 0 meaning INBOX_RETENTION.
func TestPass_PartitionRetentionAndItsHorizon(t *testing.T) {
	ctx := context.Background()
	clock := testkit.NewClock()
	var got []store.PruneParams
	s := pruneParams{testkit.OpenSQLite(t, store.Options{Now: clock.Now}), &got}
	pass := func(enabled bool, horizon time.Duration) store.PruneParams {
		t.Helper()
		got = nil
		cfg := newConfig(s)
		cfg.Now = clock.Now
		cfg.PartitionRetention, cfg.PartitionRetentionHorizon = enabled, horizon
		if _, _, err := newHousekeeper(t, cfg).Pass(ctx); err != nil || len(got) == 0 {
			t.Fatalf("Pass: %v, %d prunes", err, len(got))
		}
		return got[0]
	}
	inbox := config.Defaults(config.Serve).Housekeeping.InboxRetention
	if p := pass(config.Defaults(config.Serve).Housekeeping.PartitionRetention, 0); !p.ByPartition || !p.EventsBefore.Equal(clock.Now().Add(-inbox)) {
		t.Errorf("defaults: %+v", p)
	}
	if p := pass(false, 0); p.ByPartition || !p.EventsBefore.Equal(clock.Now().Add(-inbox)) {
		t.Errorf("PARTITION_RETENTION_ENABLED=false: %+v", p)
	}
	if p := pass(true, 30*24*time.Hour); !p.ByPartition || !p.EventsBefore.Equal(clock.Now().Add(-30*24*time.Hour)) {
		t.Errorf("horizon 720h: %+v", p)
	}
}
