package dispatch

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// newTestClaimer is a claimer on r's store for a process named owner,
// whose ledger holds at most maxInFlight jobs; its idle poll never fires
// (only a wake, a hint or freed room moves it).
func newTestClaimer(r *partsRig, owner string, maxInFlight int) (*claimer, *ledger, *queue) {
	l := newLedger(maxInFlight, r.cfg.Lease, giveBackTo(r.store, r.log))
	q := &queue{ch: make(chan unit, 16)}
	l.q.Store(q)
	c := &claimer{cfg: r.cfg, store: r.store, ledger: l, heart: newHeart(r.cfg.Lease, owner), gate: newStopGate(),
		excluded: func() []string { return nil }, log: r.log, now: r.now, wakeCh: make(chan struct{}, 1),
		idleAfter: func(time.Duration) <-chan time.Time { return nil }}
	return c, l, q
}

// running runs c's loop until the test ends (it stops the claimer and
// waits for the loop to return).
func running(t *testing.T, c *claimer, q *queue) {
	done := make(chan struct{})
	go func() { defer close(done); c.loop(context.Background(), q) }()
	t.Cleanup(func() {
		c.gate.stop(context.Background())
		select {
		case <-done:
		case <-time.After(testkit.Patience):
			t.Error("the claim loop did not return after the stop")
		}
	})
}

// queued waits until the queue holds n units and takes them, their jobs'
// events sorted.
func queued(t *testing.T, l *ledger, q *queue, n int) []string {
	t.Helper()
	var out []string
	deadline := time.After(testkit.Patience)
	for range n {
		select {
		case u := <-q.ch:
			out = append(out, eventIDs(l.runs.jobs(u))...)
		case <-deadline:
			t.Fatalf("%d of %d units queued (%v)", len(out), n, out)
		}
	}
	sort.Strings(out)
	return out
}

// The loop's first claim (across all subscriptions) takes what is due,
// leased to this process: queued, held in the ledger, counted against
// the room.
func TestClaimer_ClaimsWhatIsDueAndHoldsIt(t *testing.T) {
	r := newPartsRig(t, 4)
	r.publish("e1", "e2")
	c, l, q := newTestClaimer(r, "disp_me", 100)
	running(t, c, q)
	if got := queued(t, l, q, 2); !slices.Equal(got, []string{"e1", "e2"}) {
		t.Fatalf("queued %v, want e1, e2", got)
	}
	if held := l.leases.all(); len(held) != 2 || l.room() != 98 {
		t.Fatalf("holding %v, room %d; want both leases held, room 98", held, l.room())
	}
	for _, h := range l.leases.all() {
		if r.status(h.JobID) != hub.JobInFlight {
			t.Fatalf("job %s is not in flight", h.JobID)
		}
	}
}

// New jobs are claimed when the claimer is woken.
func TestClaimer_AWakeClaimsNewJobs(t *testing.T) {
	r := newPartsRig(t, 4)
	c, l, q := newTestClaimer(r, "disp_me", 100)
	running(t, c, q)
	r.publish("e1")
	c.wake()
	if got := queued(t, l, q, 1); !slices.Equal(got, []string{"e1"}) {
		t.Fatalf("queued %v, want e1", got)
	}
}

// The claimer takes no more than the ledger's room: with none it waits,
// and room freed (jobs answered) is filled, no more.
func TestClaimer_ClaimsNoMoreThanTheRoom(t *testing.T) {
	r := newPartsRig(t, 4)
	r.publish("e1", "e2", "e3")
	c, l, q := newTestClaimer(r, "disp_me", 2)
	l.reserve(2) // two jobs held already: no room
	running(t, c, q)
	l.answered(1)
	if got := queued(t, l, q, 1); len(got) != 1 {
		t.Fatalf("queued %v, want one job", got)
	}
	if n := r.jobs()[hub.JobInFlight]; n != 1 || l.room() != 0 {
		t.Fatalf("%d jobs in flight, room %d; want 1 (the room freed), 0", n, l.room())
	}
}

// Once the stop began the loop claims nothing more and returns.
func TestClaimer_StopsClaimingOnceStopped(t *testing.T) {
	r := newPartsRig(t, 4)
	c, _, q := newTestClaimer(r, "disp_me", 100)
	if err := c.gate.stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.publish("e1")
	done := make(chan struct{})
	go func() { defer close(done); c.loop(context.Background(), q) }()
	select {
	case <-done:
	case <-time.After(testkit.Patience):
		t.Fatal("the loop did not return though stopped")
	}
	if n := r.jobs()[hub.JobInFlight]; n != 0 || len(q.ch) != 0 {
		t.Fatalf("%d jobs in flight, %d queued after the stop; want none", n, len(q.ch))
	}
}

// A claim whose answer was lost is found by its token.
func TestClaimer_ReclaimFindsALostClaimByItsToken(t *testing.T) {
	r := newPartsRig(t, 4)
	r.publish("e1", "e2")
	c, _, _ := newTestClaimer(r, "disp_me", 100)
	token := hub.NewID("lease", r.now())
	cs, err := r.store.ClaimJobs(r.ctx, store.ClaimParams{Batch: 10, Lease: time.Hour, Owner: c.heart.id(), Token: token})
	if err != nil || len(cs) != 2 {
		t.Fatalf("claimed %d, %v", len(cs), err)
	}
	got := eventIDs(c.reclaim(r.ctx, token))
	sort.Strings(got)
	if !slices.Equal(got, []string{"e1", "e2"}) {
		t.Fatalf("reclaimed %v, want e1, e2", got)
	}
	if again := c.reclaim(r.ctx, "lease_nobody"); len(again) != 0 {
		t.Fatalf("reclaimed %d jobs under a token that claimed none", len(again))
	}
}
