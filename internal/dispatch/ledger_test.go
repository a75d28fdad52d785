package dispatch

import (
	"slices"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// recorder is a ledger's giveBack that remembers what it was given.
type recorder struct{ given []string }

func (r *recorder) giveBack(leases []store.JobLease) {
	for _, l := range leases {
		r.given = append(r.given, l.JobID)
	}
}

func newTestLedger(maxInFlight int) (*ledger, *recorder) {
	rec := &recorder{}
	return newLedger(maxInFlight, time.Hour, rec.giveBack), rec
}

// unordered is a leased job of subscription sub that is not ordered
// (max_in_flight 4).
func unordered(id, sub string, seq int64) store.Claimed {
	c := job(id, sub, seq)
	c.Subscription.MaxInFlight = 4
	return c
}

// Room is MaxInFlight less what is held: a birth's reservation takes what
// is left (and no more), answered jobs free room and tell the claim loop.
func TestLedger_RoomIsReservedAndFreed(t *testing.T) {
	l, _ := newTestLedger(5)
	if l.room() != 5 {
		t.Fatalf("room %d of an empty ledger, want 5", l.room())
	}
	if got := l.reserve(3); got != 3 || l.room() != 2 {
		t.Fatalf("reserved %d, room %d; want 3, 2", got, l.room())
	}
	if got := l.reserve(3); got != 2 || l.room() != 0 {
		t.Fatalf("reserved %d with 2 left, room %d; want 2, 0", got, l.room())
	}
	if got := l.reserve(1); got != 0 {
		t.Fatalf("reserved %d with no room", got)
	}
	l.answered(4)
	if l.room() != 4 {
		t.Fatalf("room %d after 4 answered, want 4", l.room())
	}
	select {
	case <-l.roomFreed:
	default:
		t.Fatal("answered jobs did not tell the claim loop room was freed")
	}
}

// Claimed jobs are held (their leases renewed, counted against the room)
// and queued oldest first: an ordered subscription's as one run, the
// others one unit each. What does not fit is given back at once: its
// leases forgotten and handed to the store, its room freed, its
// subscription no longer drained, and (ordered) later births of it held
// back until a claim takes it again.
func TestLedger_EnqueueHoldsQueuesAndGivesBackWhatDoesNotFit(t *testing.T) {
	l, rec := newTestLedger(10)
	q := &queue{ch: make(chan unit, 2)}
	l.hints.claimed([]store.Claimed{job("x", "late", 1)}, store.ClaimParams{Batch: 10, Run: 4}, l.hints.now())
	if len(l.hints.undrained([]string{"late"})) != 0 {
		t.Fatal("setup: late is not drained")
	}
	l.enqueue(q, []store.Claimed{job("o2", "ord", 2), unordered("u1", "par", 1), job("o1", "ord", 0),
		job("l1", "late", 5)})

	if l.room() != 10-3 {
		t.Fatalf("room %d, want 7 (3 held after one given back)", l.room())
	}
	if !slices.Equal(rec.given, []string{"l1"}) {
		t.Fatalf("given back %v, want [l1] (the queue holds two units)", rec.given)
	}
	if !l.leases.holds("ord") || !l.leases.holds("par") || l.leases.holds("late") {
		t.Fatal("leases: ord and par held, late given back")
	}
	if !l.runs.released("late") {
		t.Fatal("a given-back ordered job does not hold its subscription's later births back")
	}
	if len(l.hints.undrained([]string{"late"})) != 1 {
		t.Fatal("a given-back job's subscription stayed drained")
	}
	var got []string
	for range 2 {
		u := <-q.ch
		got = append(got, ids(l.runs.jobs(u))...)
	}
	if !slices.Equal(got, []string{"o1", "o2", "u1"}) {
		t.Fatalf("queued %v, want the run o1, o2 (in order) then u1", got)
	}
}

// A later claim of an ordered subscription joins its run while it lasts.
func TestLedger_LaterClaimJoinsTheRun(t *testing.T) {
	l, rec := newTestLedger(10)
	q := &queue{ch: make(chan unit, 4)}
	l.enqueue(q, []store.Claimed{job("a1", "a", 1)})
	l.enqueue(q, []store.Claimed{job("a2", "a", 2)})
	if len(q.ch) != 1 || len(rec.given) != 0 {
		t.Fatalf("%d units queued, %v given back; want one run, nothing given back", len(q.ch), rec.given)
	}
	u := <-q.ch
	if next, ok := l.runs.take(u.run); !ok || next.Job.ID != "a2" {
		t.Fatalf("the run's next job %+v, %v; want a2", next.Job, ok)
	}
}

// Results written or given up stop their leases' renewal, only under
// their own token.
func TestLedger_ForgetAllForgetsOnlyTheResultsLeases(t *testing.T) {
	l, _ := newTestLedger(10)
	l.enqueue(&queue{ch: make(chan unit, 4)}, []store.Claimed{unordered("j1", "a", 1), unordered("j2", "b", 1)})
	l.forgetAll([]store.Completion{{JobLease: store.JobLease{JobID: "j1", LeaseToken: "tok-j1"}},
		{JobLease: store.JobLease{JobID: "j2", LeaseToken: "stale"}}})
	all := l.leases.all()
	if len(all) != 1 || all[0].JobID != "j2" {
		t.Fatalf("still renewing %v, want j2 alone", all)
	}
}

// Taken over: everything waiting here is dropped, not given back (it is
// another process's now), and counted so its room is freed.
func TestLedger_DropAllDropsWithoutGivingBack(t *testing.T) {
	l, rec := newTestLedger(10)
	q := &queue{ch: make(chan unit, 4)}
	l.q.Store(q)
	l.enqueue(q, []store.Claimed{job("a1", "a", 1), job("a2", "a", 2), unordered("b1", "b", 1)})
	parked := []unit{{first: unordered("p1", "p", 1)}}
	if n := l.dropAll(parked); n != 4 {
		t.Fatalf("dropped %d jobs, want 4 (a run of two, b1, the parked p1)", n)
	}
	if len(q.ch) != 0 || len(l.leases.all()) != 0 || len(rec.given) != 0 {
		t.Fatalf("after the drop: %d queued, leases %v, given back %v; want none of each", len(q.ch), l.leases.all(), rec.given)
	}
	if l.runs.join("a", []store.Claimed{job("a3", "a", 3)}) {
		t.Fatal("a dropped run still takes jobs")
	}
}

// Recovery waits a whole lease after a store failure here.
func TestLedger_RecoveryWaitsALeaseAfterAStoreFailure(t *testing.T) {
	l, _ := newTestLedger(1)
	if !l.recoveryAllowed() {
		t.Fatal("recovery held back though the store never failed")
	}
	l.storeFailed()
	if l.recoveryAllowed() {
		t.Fatal("recovery allowed right after a store failure (lease: an hour)")
	}
	short := newLedger(1, 20*time.Millisecond, nil)
	short.storeFailed()
	deadline := time.Now().Add(10 * time.Second)
	for !short.recoveryAllowed() {
		if time.Now().After(deadline) {
			t.Fatal("recovery still held back long after the lease")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
