package storetest

import (
	"fmt"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (e env) claimWith(t testing.TB, p store.ClaimParams) []store.Claimed {
	t.Helper()
	if p.Lease == 0 {
		p.Lease = time.Minute
	}
	c, err := e.store.ClaimJobs(e.ctx, p)
	if err != nil {
		t.Fatalf("ClaimJobs: %v", err)
	}
	return c
}

func (e env) recover(t testing.TB) store.RecoverResult {
	t.Helper()
	res, err := e.store.RecoverLeases(e.ctx, store.RecoverParams{PoisonThreshold: 5, Limit: 100})
	if err != nil {
		t.Fatalf("RecoverLeases: %v", err)
	}
	return res
}

func leaseOf(c store.Claimed) store.JobLease {
	return store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}
}

func ids(cs []store.Claimed) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s#%d", c.Job.SubscriptionID, c.Job.EventSequence))
	}
	return fmt.Sprint(out)
}

// testLeases: renewal, runs of ordered subscriptions, exclusion and
// waking (docs/delivery.md, docs/breakers.md).
func testLeases(t *testing.T, open Opener) {
	t.Run("RenewedLeasesOutliveTheirFirstTermAndAreFencedOnTheToken", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 2)
		e.publish(t, "acme", "e", 2)
		c := e.claim(t, 16) // one minute leases
		if len(c) != 2 {
			t.Fatalf("claimed %d", len(c))
		}
		for range 5 { // five minutes, renewed every 40 s
			e.clock.Advance(40 * time.Second)
			lost, err := e.store.RenewLeases(e.ctx, store.RenewParams{Leases: []store.JobLease{leaseOf(c[0]), leaseOf(c[1])}, Lease: time.Minute})
			if err != nil || len(lost) != 0 {
				t.Fatalf("RenewLeases = %v, %v", lost, err)
			}
			if res := e.recover(t); res != (store.RecoverResult{}) {
				t.Fatalf("a renewed lease was recovered: %+v", res)
			}
		}
		// Fenced on the token: a stale token renews nothing; a completed
		// job's lease is gone.
		e.complete(t, e.succeeded(c[1]))
		stale := store.JobLease{JobID: c[0].Job.ID, LeaseToken: "lease_stale"}
		lost, err := e.store.RenewLeases(e.ctx, store.RenewParams{Leases: []store.JobLease{stale, leaseOf(c[1])}, Lease: time.Minute})
		if err != nil || fmt.Sprint(lost) != fmt.Sprint([]string{c[0].Job.ID, c[1].Job.ID}) {
			t.Fatalf("RenewLeases = %v, %v; want both lost", lost, err)
		}
		// Without renewal the lease expires as before.
		e.clock.Advance(61 * time.Second)
		if res := e.recover(t); res.Recovered != 1 {
			t.Fatalf("recover = %+v", res)
		}
	})

	t.Run("AnOrderedSubscriptionLeasesARunInArrivalOrder", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		e.subscribe(t, "acme", "sub_a", 1)
		e.subscribe(t, "acme", "sub_wide", 4) // max_in_flight 4: no runs
		e.subscribe(t, "globex", "sub_g", 1)
		e.publish(t, "acme", "a", 6)
		e.publish(t, "globex", "g", 1)
		got := e.claimWith(t, store.ClaimParams{Batch: 16, Run: 3})
		// sub_a: a run of 3; sub_wide: its 4 free slots; sub_g: its one job.
		runA, wide, g := 0, 0, 0
		var last int64
		for _, c := range got {
			switch c.Job.SubscriptionID {
			case "sub_a":
				runA++
				if c.Job.EventSequence <= last {
					t.Fatalf("run out of order: %s", ids(got))
				}
				last = c.Job.EventSequence
			case "sub_wide":
				wide++
			case "sub_g":
				g++
			}
		}
		if runA != 3 || wide != 4 || g != 1 {
			t.Fatalf("claimed %s", ids(got))
		}
		// The run holds the subscription: nothing more of it is claimed,
		// even once part of the run is done.
		var run []store.Claimed
		for _, c := range got {
			if c.Job.SubscriptionID == "sub_a" {
				run = append(run, c)
			}
		}
		e.complete(t, e.succeeded(run[0]))
		for _, c := range e.claimWith(t, store.ClaimParams{Batch: 16, Run: 3}) {
			if c.Job.SubscriptionID == "sub_a" {
				t.Fatalf("claimed %s beside its run", ids([]store.Claimed{c}))
			}
		}
		// A crash mid-run: only the first job still in flight may have been
		// under way; the ones behind it were never attempted.
		e.clock.Advance(2 * time.Minute)
		res := e.recover(t)
		if res.Unstarted != 1 {
			t.Fatalf("recover = %+v, want one run-ahead job back uncounted", res)
		}
		j1, a1 := e.job(t, "acme", run[1].Job.ID)
		j2, a2 := e.job(t, "acme", run[2].Job.ID)
		if j1.Status != hub.JobPending || j1.Recoveries != 1 || j1.Attempts != 1 || len(a1) != 1 {
			t.Fatalf("the run's job in flight: %+v, %d attempts", j1, len(a1))
		}
		if j2.Status != hub.JobPending || j2.Recoveries != 0 || j2.Attempts != 0 || len(a2) != 0 {
			t.Fatalf("the run's job never attempted: %+v, %d attempts", j2, len(a2))
		}
		// Recovered, the subscription offers its run again from its oldest.
		again := e.claimWith(t, store.ClaimParams{Batch: 16, Run: 2, Subscriptions: []string{"sub_a"}})
		if len(again) != 2 || again[0].Job.ID != run[1].Job.ID || again[1].Job.ID != run[2].Job.ID {
			t.Fatalf("after recovery claimed %s", ids(again))
		}
	})

	t.Run("ARunRecoveredWholeCountsOnlyItsFirstJob", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_a", 1)
		e.publish(t, "acme", "a", 4)
		for round := 1; round <= 5; round++ {
			run := e.claimWith(t, store.ClaimParams{Batch: 16, Run: 4})
			if len(run) != 4 {
				t.Fatalf("round %d: claimed %s", round, ids(run))
			}
			e.clock.Advance(2 * time.Minute)
			res := e.recover(t)
			if res.Unstarted != 3 || res.Recovered+res.Poisoned != 1 {
				t.Fatalf("round %d: %+v", round, res)
			}
		}
		// The first job is poison after 5 recoveries; the others were never
		// attempted and are not.
		jobs, err := e.store.ListJobs(e.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: "sub_a", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			first := j.EventSequence == 1
			if first && (j.Status != hub.JobDeadLettered || j.DeadLetterReason != hub.DeadLetterPoison || j.Attempts != 5) ||
				!first && (j.Status != hub.JobPending || j.Recoveries != 0 || j.Attempts != 0) {
				t.Fatalf("job %+v", j)
			}
		}
	})

	t.Run("ExcludedSubscriptionsAreNotClaimed", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 1)
		e.subscribe(t, "acme", "sub_2", 1)
		e.publish(t, "acme", "e", 1)
		got := e.claimWith(t, store.ClaimParams{Batch: 16, Exclude: []string{"sub_1"}})
		if len(got) != 1 || got[0].Job.SubscriptionID != "sub_2" {
			t.Fatalf("claimed %s", ids(got))
		}
		if got := e.claimWith(t, store.ClaimParams{Batch: 16, Exclude: []string{"sub_1"}, Subscriptions: []string{"sub_1"}}); len(got) != 0 {
			t.Fatalf("a targeted claim took an excluded subscription: %s", ids(got))
		}
		if got := e.claimWith(t, store.ClaimParams{Batch: 16}); len(got) != 1 || got[0].Job.SubscriptionID != "sub_1" {
			t.Fatalf("claimed %s", ids(got))
		}
	})

	t.Run("WakeJobsMakesWaitingJobsDueNow", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 4)
		e.subscribe(t, "acme", "sub_2", 4)
		e.publish(t, "acme", "e", 2)
		var later []store.Completion
		for _, c := range e.claim(t, 16) {
			later = append(later, e.failed(c, e.clock.Now().Add(time.Hour)))
		}
		e.complete(t, later...)
		if got := e.claim(t, 16); len(got) != 0 {
			t.Fatalf("claimed %s before their retry", ids(got))
		}
		n, err := e.store.WakeJobs(e.ctx, []string{"sub_1"})
		if err != nil || n != 2 {
			t.Fatalf("WakeJobs = %d, %v", n, err)
		}
		got := e.claim(t, 16)
		if len(got) != 2 || got[0].Job.SubscriptionID != "sub_1" || got[1].Job.SubscriptionID != "sub_1" {
			t.Fatalf("claimed %s; want sub_1's two jobs only", ids(got))
		}
		if got[0].Job.Attempts != 1 {
			t.Fatalf("waking changed the attempts: %+v", got[0].Job)
		}
	})
}
