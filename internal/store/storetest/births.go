package storetest

import (
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// nursery is a dispatcher that takes jobs born leased: it offers the room
// it is given and keeps what it is handed.
type nursery struct {
	owner string
	mu    sync.Mutex
	room  int
	excl  []string
	born  []store.Claimed
	calls int // Born calls
}

func (n *nursery) Offer() *store.BirthOffer {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.room <= 0 {
		return nil
	}
	return &store.BirthOffer{Owner: n.owner, Token: hub.NewID("lease", time.Now()), Lease: time.Minute, Room: n.room,
		Exclude: n.excl}
}

func (n *nursery) Born(_ *store.BirthOffer, jobs []store.Claimed) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls++
	n.born = append(n.born, jobs...)
}

func (n *nursery) take() []store.Claimed {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.born
	n.born = nil
	return out
}

// births makes n this process's dispatcher: every ingest of the test
// offers its room (as the writer does) until the test ends.
func (e env) births(t testing.TB, n *nursery) {
	t.Helper()
	e.dispatcher.n = n
	t.Cleanup(func() { e.dispatcher.n = nil })
}

// testBirths: the writer's transaction leases jobs at birth to this
// process's dispatcher when it has room (docs/architecture.md, "The
// writer"), and leaves the rest pending for claims.
func testBirths(t *testing.T, open Opener) {
	t.Run("BornJobsAreLeasedWithTheirEventsTheRestArePending", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		wide := e.subscribe(t, "acme", "sub_wide", 2)
		n := &nursery{owner: "me", room: 100}
		e.births(t, n)
		e.publish(t, "acme", "e", 3)
		born := n.take()
		if len(born) != 2 || n.calls != 1 {
			t.Fatalf("born %s in %d calls; want the first 2 (max_in_flight 2) in 1", ids(born), n.calls)
		}
		for i, c := range born {
			if c.Job.SubscriptionID != wide.ID || c.Event.Sequence != c.Job.EventSequence || c.Event.ID == "" ||
				c.Subscription.ID != wide.ID || c.LeaseToken == "" || c.Job.Status != hub.JobInFlight {
				t.Fatalf("born job %d incomplete: %+v", i, c)
			}
		}
		if born[0].Job.EventSequence > born[1].Job.EventSequence {
			t.Errorf("born out of arrival order: %s", ids(born))
		}
		// The third is pending: a claim takes it, and no more (two in flight).
		if c := e.claim(t, 16); len(c) != 0 {
			t.Fatalf("claimed %s while both slots were born leased", ids(c))
		}
		e.complete(t, e.succeeded(born[0]))
		c := e.claim(t, 16)
		if len(c) != 1 || c[0].Job.EventSequence != 3 {
			t.Fatalf("claimed %s after one born job finished; want the third event's", ids(c))
		}
		if j, as := e.job(t, "acme", born[0].Job.ID); j.Status != hub.JobSucceeded || len(as) != 1 {
			t.Errorf("a born job completed under its token: %s with %d attempts", j.Status, len(as))
		}
	})

	t.Run("TheOfferBoundsTheJobsBornInArrivalOrder", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_a", 10)
		e.subscribe(t, "acme", "sub_b", 10)
		n := &nursery{owner: "me", room: 3}
		e.births(t, n)
		e.publish(t, "acme", "e", 2) // 4 jobs: 2 events × 2 subscriptions
		born := n.take()
		if len(born) != 3 {
			t.Fatalf("born %s; want 3, the offer's room", ids(born))
		}
		if c := e.claim(t, 16); len(c) != 1 || c[0].Job.EventSequence != 2 {
			t.Fatalf("claimed %s; want the one job left, of the second event", ids(c))
		}
	})

	t.Run("AnOrderedSubscriptionIsBornBehindItsOwnRunOnly", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 1)
		n := &nursery{owner: "me", room: 100}
		e.births(t, n)
		e.publish(t, "acme", "a", 3)
		born := n.take()
		if len(born) != 3 {
			t.Fatalf("born %s; an ordered subscription with nothing waiting takes the whole batch, in order", ids(born))
		}
		// More while those are in flight here: appended behind them.
		e.ingest(t, store.IngestParams{Events: []hub.Event{NewEvent("acme", "b-0")}})
		if more := n.take(); len(more) != 1 || more[0].Job.EventSequence != 4 {
			t.Fatalf("born %s behind this dispatcher's own jobs; want event 4", ids(more))
		}
		// A lease lost: every in-flight job goes back; only the first was
		// attempted (the others were run-ahead behind it).
		e.clock.Advance(2 * time.Minute)
		if res := e.recover(t); res.Recovered != 1 || res.Unstarted != 3 {
			t.Fatalf("recovered %+v; want the first counted and three run-ahead uncounted", res)
		}
		// Pending jobs wait: nothing is born ahead of them, in any process.
		e.ingest(t, store.IngestParams{Events: []hub.Event{NewEvent("acme", "c-0")}})
		if more := n.take(); len(more) != 0 {
			t.Fatalf("born %s while earlier jobs were pending", ids(more))
		}
		c := e.claimWith(t, store.ClaimParams{Batch: 16, Run: 16, Owner: "other"})
		if len(c) != 5 || c[0].Job.EventSequence != 1 {
			t.Fatalf("claimed %s; want the run of 5 from event 1", ids(c))
		}
		// Leased by another dispatcher: new jobs are not born here.
		e.ingest(t, store.IngestParams{Events: []hub.Event{NewEvent("acme", "d-0")}})
		if more := n.take(); len(more) != 0 {
			t.Fatalf("born %s here while another dispatcher held the subscription", ids(more))
		}
	})

	t.Run("HeldExcludedOrRateLimitedSubscriptionsAreNotBorn", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		held := e.subscribe(t, "acme", "sub_held", 1)
		excl := e.subscribe(t, "acme", "sub_excl", 4)
		e.publish(t, "acme", "a", 1)
		c := e.claim(t, 16)
		var heldJob store.Claimed
		for _, x := range c {
			if x.Job.SubscriptionID == held.ID {
				heldJob = x
			} else {
				e.complete(t, e.succeeded(x))
			}
		}
		e.complete(t, e.shed(heldJob, e.clock.Now().Add(time.Minute))) // holds sub_held for a minute
		n := &nursery{owner: "me", room: 100, excl: []string{excl.ID}}
		e.births(t, n)
		e.publish(t, "acme", "b", 1)
		if born := n.take(); len(born) != 0 {
			t.Fatalf("born %s; a held and an excluded subscription take none", ids(born))
		}
	})
}
