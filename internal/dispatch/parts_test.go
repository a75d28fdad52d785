package dispatch

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// job is a leased job of subscription sub (max_in_flight 1: ordered).
func job(id, sub string, seq int64) store.Claimed {
	return store.Claimed{Job: hub.Job{ID: id, SubscriptionID: sub, EventSequence: seq}, LeaseToken: "tok-" + id,
		Subscription: hub.Subscription{ID: sub, MaxInFlight: 1}}
}

func ids(cs []store.Claimed) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Job.ID)
	}
	return out
}

// An ordered subscription's run takes later jobs at its back while it
// lasts; once it has given out its last job it is over, and later jobs
// begin a new run.
func TestRuns_LaterJobsJoinTheBackUntilTheRunEnds(t *testing.T) {
	r := newRuns()
	if r.join("sub", []store.Claimed{job("j0", "sub", 0)}) {
		t.Fatal("joined a run that does not exist")
	}
	u := r.begin("sub", []store.Claimed{job("j1", "sub", 1), job("j2", "sub", 2)})
	if u.first.Job.ID != "j1" || u.run == nil {
		t.Fatalf("unit %+v", u)
	}
	if !r.join("sub", []store.Claimed{job("j3", "sub", 3)}) {
		t.Fatal("a later job did not join the run")
	}
	var got []string
	for {
		c, ok := r.take(u.run)
		if !ok {
			break
		}
		got = append(got, c.Job.ID)
	}
	if !slices.Equal(got, []string{"j2", "j3"}) {
		t.Fatalf("the run gave %v after its first, want [j2 j3]", got)
	}
	if r.join("sub", []store.Claimed{job("j4", "sub", 4)}) {
		t.Fatal("joined a run that had ended")
	}
	// Drained (stopping, throttled): what waited comes back, the run ends.
	u = r.begin("sub", []store.Claimed{job("j5", "sub", 5), job("j6", "sub", 6)})
	if rest := r.jobs(u); !slices.Equal(ids(rest), []string{"j5", "j6"}) || r.join("sub", nil) {
		t.Fatalf("jobs of a drained unit %v", ids(rest))
	}
}

// The lease registry renews what is held, by subscription, and forgets a
// lease only under its own token.
func TestLeaseRegistry_HoldsBySubscriptionAndForgetsOnlyItsOwnToken(t *testing.T) {
	r := newLeaseRegistry()
	r.hold([]store.Claimed{job("j1", "a", 1), job("j2", "a", 2), job("j3", "b", 1)})
	if !r.holds("a") || !r.holds("b") || r.holds("c") {
		t.Fatal("holds by subscription wrong")
	}
	r.forget(store.JobLease{JobID: "j3", LeaseToken: "someone-else's"})
	if !r.holds("b") {
		t.Fatal("forgot a lease under another token")
	}
	r.forget(store.JobLease{JobID: "j3", LeaseToken: "tok-j3"}, store.JobLease{JobID: "j1", LeaseToken: "tok-j1"})
	if r.holds("b") || !r.holds("a") {
		t.Fatal("after forgetting j3 and j1: b held no longer, a still (j2)")
	}
	all := r.all()
	if len(all) != 1 || all[0].JobID != "j2" {
		t.Fatalf("renewing %v, want j2 alone", all)
	}
}

// Hints: a freed subscription is named once; a drained one is not named
// after its jobs finish, until a hint (new jobs) undrains it; a claim or a
// birth that a hint overlapped marks nothing drained.
func TestHints_DrainedSubscriptionsAreLeftAloneUntilAnnounced(t *testing.T) {
	h := newHints()
	h.add([]string{"a", "b"})
	got := h.take()
	sort.Strings(got)
	if !slices.Equal(got, []string{"a", "b"}) || len(h.take()) != 0 {
		t.Fatalf("took %v, then more", got)
	}
	p := store.ClaimParams{Batch: 10, Run: 4}
	seq := h.now()
	h.claimed([]store.Claimed{job("j1", "a", 1)}, p, seq) // took fewer than a run: a has nothing more due
	if u := h.undrained([]string{"a", "b"}); !slices.Equal(u, []string{"b"}) {
		t.Fatalf("undrained %v, want [b]", u)
	}
	h.add([]string{"a"}) // a's new jobs announced
	if u := h.undrained([]string{"a"}); len(u) != 1 {
		t.Fatal("an announced subscription stayed drained")
	}
	seq = h.now()
	h.add([]string{"a"}) // overlaps the next claim
	h.claimed([]store.Claimed{job("j2", "a", 2)}, p, seq)
	if u := h.undrained([]string{"a"}); len(u) != 1 {
		t.Fatal("a claim overlapped by a hint marked its subscription drained")
	}
	// Births: drained unless hinted since the offer, or woken.
	seq = h.now()
	h.add([]string{"b"})
	h.born([]string{"a", "b"}, seq)
	if u := h.undrained([]string{"a", "b"}); !slices.Equal(u, []string{"b"}) {
		t.Fatalf("after a birth, undrained %v, want [b] (hinted since the offer)", u)
	}
	h.wake()
	if u := h.undrained([]string{"a", "b"}); len(u) != 2 {
		t.Fatal("a wake left subscriptions drained")
	}
	seq = h.now()
	h.wake()
	h.born([]string{"a"}, seq)
	if u := h.undrained([]string{"a"}); len(u) != 1 {
		t.Fatal("a birth overlapped by a wake marked drained")
	}
}

// releasing is a store that only gives leases back, and remembers which.
type releasing struct {
	Store
	released []string
}

func (r *releasing) ReleaseJobs(_ context.Context, leases []store.JobLease) error {
	for _, l := range leases {
		r.released = append(r.released, l.JobID)
	}
	return nil
}

// Born places jobs between claims: a job born behind an ordered
// subscription's earlier jobs joins their run, or begins one when they
// were all sent. A job it must give back (no room in the local queue)
// holds back the later births of its subscription, which would overtake
// it, until a claim takes it again.
func TestBorn_AJobGivenBackIsNotOvertakenByALaterBirth(t *testing.T) {
	st := &releasing{}
	kr, err := envelope.NewKeyring(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dispatch: config.Defaults(config.Serve).Dispatch, Store: st, Keyring: kr,
		Destinations: destination.NewRegistry(time.Second, nil), Metrics: metrics.New()}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	q := &queue{ch: make(chan unit, 1)} // room for one unit
	d.ledger.q.Store(q)
	born := func(c store.Claimed) {
		c.Behind = true
		d.ledger.local.Add(1)
		d.Born(&store.BirthOffer{Owner: d.heart.id(), Token: c.LeaseToken, Room: 1}, []store.Claimed{c})
	}
	born(job("s12", "s", 12)) // its earlier jobs all sent: it begins a run, the queue is full
	born(job("s13", "s", 13)) // joins that run
	if len(st.released) != 0 || len(q.ch) != 1 {
		t.Fatalf("released %v, %d units queued; want none released, one run queued", st.released, len(q.ch))
	}
	born(job("t30", "t", 30)) // no room in the queue: given back
	born(job("t31", "t", 31)) // would overtake t30: given back too
	<-q.ch                    // room again
	born(job("t32", "t", 32)) // still behind t30
	if !slices.Equal(st.released, []string{"t30", "t31", "t32"}) {
		t.Fatalf("released %v, want t30, t31, t32", st.released)
	}
	// A claim takes t's pending jobs again, t30 first: later births join.
	d.ledger.enqueue(q, []store.Claimed{job("t30", "t", 30), job("t31", "t", 31), job("t32", "t", 32)})
	born(job("t33", "t", 33))
	if len(st.released) != 3 {
		t.Fatalf("released %v after the claim took t30 back", st.released)
	}
	u := <-q.ch
	var got []string
	for c, ok := u.first, true; ok; c, ok = d.ledger.runs.take(u.run) {
		got = append(got, c.Job.ID)
	}
	if !slices.Equal(got, []string{"t30", "t31", "t32", "t33"}) {
		t.Fatalf("t's run %v, want t30..t33 in order", got)
	}
}

// A claim that took fewer jobs of an ordered subscription than a run
// holds took all it had: drained, no hand-off is made for it. One that
// took a whole run may have left more behind it: drained no longer, even
// if it was marked so before (a birth's offer may have been cut short by
// its room).
func TestHints_AWholeRunUndrainsASubscription(t *testing.T) {
	h := newHints()
	p := store.ClaimParams{Batch: 256, Run: 2}
	h.claimed([]store.Claimed{job("j1", "sub", 1)}, p, h.now())
	if got := h.undrained([]string{"sub"}); len(got) != 0 {
		t.Fatalf("a claim of less than a run left %v undrained", got)
	}
	h.claimed([]store.Claimed{job("j2", "sub", 2), job("j3", "sub", 3)}, p, h.now())
	if got := h.undrained([]string{"sub"}); !slices.Equal(got, []string{"sub"}) {
		t.Fatal("a claim of a whole run left the subscription drained: its next run would wait for the idle poll")
	}
}
