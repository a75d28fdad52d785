package dispatch

import (
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// newTestMaintainer is a maintainer on r's store for a process named
// owner (not registered: its heartbeat never fences it), counting the
// claimer's wake-ups.
func newTestMaintainer(r *partsRig, owner string) (*maintainer, *ledger, *int) {
	wakes := 0
	l := newLedger(r.cfg.MaxInFlight, r.cfg.Lease, giveBackTo(r.store, r.log))
	m := &maintainer{cfg: r.cfg, store: r.store, ledger: l, heart: newHeart(r.cfg.Lease, owner),
		stopping: make(chan struct{}), wake: func() { wakes++ }, metrics: r.metrics, log: r.log, now: r.now}
	return m, l, &wakes
}

// A job whose lease ended without a result (its process has no
// heartbeat) is taken over by the next pass: pending again, and the
// claimer is woken to claim it. Not before its lease ends.
func TestMaintainer_TakesOverAnExpiredLease(t *testing.T) {
	r := newPartsRig(t, 1)
	r.publish("e1")
	cs := r.claim("disp_gone", 10, 4*time.Second)
	if len(cs) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(cs))
	}
	m, _, wakes := newTestMaintainer(r, "disp_me")
	if err := m.Maintain(r.ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.status(cs[0].Job.ID); st != hub.JobInFlight || *wakes != 0 {
		t.Fatalf("within its lease: %s, %d wake-ups; want in_flight, none", st, *wakes)
	}
	r.clock.Advance(10 * time.Second)
	if err := m.Maintain(r.ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.status(cs[0].Job.ID); st != hub.JobPending || *wakes == 0 {
		t.Fatalf("after its lease: %s, %d wake-ups; want pending and the claimer woken", st, *wakes)
	}
	if again := r.claim("disp_me", 10, 4*time.Second); len(again) != 1 || again[0].Job.ID != cs[0].Job.ID {
		t.Fatalf("claimed %d jobs after the take-over, want the one taken over", len(again))
	}
}

// Right after a store failure here nothing is taken over: this process
// may be the one cut off, and the others renew first
// (docs/delivery.md, "Crashes").
func TestMaintainer_HoldsRecoveryBackAfterAStoreFailure(t *testing.T) {
	r := newPartsRig(t, 1)
	r.publish("e1")
	cs := r.claim("disp_gone", 10, 4*time.Second)
	m, l, wakes := newTestMaintainer(r, "disp_me")
	l.storeFailed()
	r.clock.Advance(10 * time.Second)
	if err := m.Maintain(r.ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.status(cs[0].Job.ID); st != hub.JobInFlight || *wakes != 0 {
		t.Fatalf("just after a store failure: %s, %d wake-ups; want in_flight, none", st, *wakes)
	}
}

// The sweep gives back the jobs leased under this process's name a while
// ago that the ledger does not hold (a hand-over whose answer was lost, a
// result given up), and keeps those it holds.
func TestMaintainer_SweepGivesBackWhatTheLedgerDoesNotHold(t *testing.T) {
	r := newPartsRig(t, 4)
	r.publish("e1", "e2")
	m, l, _ := newTestMaintainer(r, "disp_me")
	cs := r.claim(m.heart.id(), 10, time.Hour)
	if len(cs) != 2 {
		t.Fatalf("claimed %d jobs, want 2", len(cs))
	}
	held, lost := cs[0], cs[1]
	l.leases.hold(cs[:1])
	if err := m.Maintain(r.ctx); err != nil {
		t.Fatal(err)
	}
	if got := r.jobs(); got[hub.JobInFlight] != 2 {
		t.Fatalf("jobs %v just after the claim; want both in flight (too recent to sweep)", got)
	}
	r.clock.Advance(sweepAfter + time.Second)
	if err := m.Maintain(r.ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.status(held.Job.ID); st != hub.JobInFlight {
		t.Fatalf("the job the ledger holds is %s, want in_flight", st)
	}
	if st := r.status(lost.Job.ID); st != hub.JobPending {
		t.Fatalf("the job the ledger does not hold is %s, want pending (given back)", st)
	}
}
