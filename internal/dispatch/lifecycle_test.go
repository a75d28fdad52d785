package dispatch_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A worker that claims and never reports (it died mid-attempt), five
// times: maintenance recovers the job four times, then dead-letters it as
// poison, and no worker is held by it again.
func TestPoison_FiveExpiredLeasesDeadLetterTheJob(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		r.publish(event("acme", "evt-1"))
		for round := 1; round <= 5; round++ {
			claimed, err := r.store.ClaimJobs(r.ctx, store.ClaimParams{Batch: 16, Lease: time.Minute})
			if err != nil || len(claimed) != 1 {
				t.Fatalf("round %d: claimed %d, %v", round, len(claimed), err)
			}
			r.clock.Advance(time.Minute + time.Second)
			if err := r.d.Maintain(r.ctx); err != nil {
				t.Fatal(err)
			}
		}
		j, _ := r.onlyJob()
		if j.Status != hub.JobDeadLettered || j.DeadLetterReason != hub.DeadLetterPoison || j.Recoveries != 5 {
			t.Fatalf("job = %+v", j)
		}
		if n := r.step(); n != 0 || len(r.sink.got()) != 0 {
			t.Fatal("the poison job was attempted")
		}
		if got := testutil.ToFloat64(r.metrics.LeasesRecovered.WithLabelValues("poisoned")); got != 1 {
			t.Fatalf("leases poisoned = %v", got)
		}
	})
}

// On stop, attempts in flight finish and are recorded; claimed jobs no
// worker started are given back, unattempted and due.
func TestRun_GracefulStopFinishesInFlightAndGivesBackTheRest(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{maxInFlight: 10, cfg: func(c *dispatch.Config) {
			c.Workers, c.ClaimBatch = 2, 10
		}})
		started := make(chan struct{}, 10)
		release := make(chan struct{})
		r.sink.script(func(int, *http.Request) (int, http.Header, string) {
			started <- struct{}{}
			<-release
			return 200, nil, ""
		})
		for i := range 6 {
			r.publish(event("acme", fmt.Sprintf("evt-%d", i)))
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.d.Run(ctx) }()
		<-started
		<-started // both workers are mid-attempt; more jobs wait in the queue
		cancel()
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		jobs, _ := r.store.ListJobs(r.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: r.sub.ID, Limit: 100})
		var succeeded, pending int
		for _, j := range jobs {
			switch {
			case j.Status == hub.JobSucceeded && j.Attempts == 1:
				succeeded++
			case j.Status == hub.JobPending && j.Attempts == 0 && j.Recoveries == 0:
				pending++
			default:
				t.Errorf("after stop: %+v", j)
			}
		}
		if succeeded != len(r.sink.got()) || succeeded < 2 || succeeded+pending != 6 {
			t.Fatalf("%d succeeded (%d requests), %d given back, of 6", succeeded, len(r.sink.got()), pending)
		}
		if n := r.step(); n == 0 && pending > 0 {
			t.Fatal("given-back jobs are not claimable at once")
		}
	})
}

// Four dispatchers on one PostgreSQL database deliver 5,000 jobs of 50
// tenants to a sink that always succeeds: each job is attempted exactly
// once, and each tenant's events arrive in arrival order.
func TestRun_FourDispatchersOnePostgresEveryJobOnce(t *testing.T) {
	testkit.Long(t)
	pg := testkit.Drivers[0]
	if pg.Name != "postgres" {
		t.Fatal("expected postgres first")
	}
	r := newRig(t, pg, rigOptions{})
	const tenants, perTenant = 50, 100
	var all []hub.Event
	for i := range tenants {
		tenant := fmt.Sprintf("t%02d", i)
		if _, err := r.store.CreateTenant(r.ctx, store.CreateTenantParams{ID: tenant, Name: tenant}); err != nil {
			t.Fatal(err)
		}
		r.subscribe(tenant, "sub_"+tenant, r.sink.URL, rigOptions{})
	}
	for n := range perTenant {
		for i := range tenants {
			all = append(all, event(fmt.Sprintf("t%02d", i), fmt.Sprintf("e-%03d", n)))
		}
	}
	for start := 0; start < len(all); start += 500 {
		r.publish(all[start : start+500]...)
	}
	var mu sync.Mutex
	seen := make(map[string]int) // delivery key -> times
	last := make(map[string]int) // tenant -> last sequence seen
	outOfOrder := 0
	r.sink.script(func(_ int, req *http.Request) (int, http.Header, string) {
		tenant := req.Header.Get("X-Lerian-Tenant-Id")
		var seq int
		fmt.Sscan(req.Header.Get("X-Lerian-Sequence"), &seq)
		mu.Lock()
		seen[tenant+"/"+req.Header.Get("X-Lerian-Event-Id")]++
		if seq <= last[tenant] {
			outOfOrder++
		}
		last[tenant] = seq
		mu.Unlock()
		return 200, nil, ""
	})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		settings := config.Defaults(config.Serve).Dispatch
		settings.IdleInterval = 10 * time.Millisecond
		d, err := dispatch.New(dispatch.Config{Dispatch: settings, Store: r.store, Keyring: r.keyring, Destinations: r.d2destinations(),
			Metrics: metrics.New(), Now: r.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); d.Run(ctx) }()
	}
	testkit.WaitFor(t, "5,000 deliveries", func() bool {
		counts, _ := r.store.CountJobs(r.ctx)
		return counts[hub.JobPending] == 0 && counts[hub.JobInFlight] == 0
	})
	cancel()
	wg.Wait()
	if len(seen) != tenants*perTenant {
		t.Fatalf("%d distinct deliveries, want %d", len(seen), tenants*perTenant)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s attempted %d times", k, n)
		}
	}
	if outOfOrder != 0 {
		t.Fatalf("%d deliveries arrived out of their tenant's order", outOfOrder)
	}
}
