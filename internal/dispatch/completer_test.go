package dispatch

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
)

// newTestCompleter is a completer on r's store for a process named owner,
// its ledger running with a local queue of room units.
func newTestCompleter(r *partsRig, owner string, room int) (*completer, *ledger, *queue) {
	l := newLedger(r.cfg.MaxInFlight, r.cfg.Lease, giveBackTo(r.store, r.log))
	q := &queue{ch: make(chan unit, room)}
	l.q.Store(q)
	c := &completer{cfg: r.cfg, store: r.store, ledger: l, heart: newHeart(r.cfg.Lease, owner), gate: newStopGate(),
		excluded: func() []string { return nil }, metrics: r.metrics, log: r.log, now: r.now}
	return c, l, q
}

// result is c's completion with status, and an attempt made now.
func (r *partsRig) result(c store.Claimed, status hub.JobStatus) store.Completion {
	now := r.now()
	return store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: status,
		SubscriptionID: c.Job.SubscriptionID, Attempt: &hub.Attempt{ID: hub.NewID("att", now), JobID: c.Job.ID, StartedAt: now}}
}

// eventIDs are the events of jobs, in order.
func eventIDs(cs []store.Claimed) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Event.ID)
	}
	return out
}

// Results written are recorded in the store and accounted for in the
// ledger: no lease of theirs is renewed any more, and the claim loop
// learns when a retry comes due.
func TestCompleter_RecordsResultsAndForgetsTheirLeases(t *testing.T) {
	r := newPartsRig(t, 4)
	r.publish("e1", "e2", "e3")
	c, l, q := newTestCompleter(r, "disp_me", 8)
	cs := r.claim(c.heart.id(), 10, time.Hour)
	if len(cs) != 3 {
		t.Fatalf("claimed %d jobs, want 3", len(cs))
	}
	l.enqueue(q, cs)
	if len(l.leases.all()) != 3 {
		t.Fatalf("holding %d leases, want 3", len(l.leases.all()))
	}
	retryAt := r.now().Add(time.Minute).Truncate(time.Millisecond)
	retry := r.result(cs[1], hub.JobPending)
	retry.NextAttemptAt, retry.LastError = retryAt, "503"
	dead := r.result(cs[2], hub.JobDeadLettered)
	dead.DeadLetterReason, dead.LastError = hub.DeadLetterExhausted, "410"
	if _, err := c.complete(r.ctx, []store.Completion{r.result(cs[0], hub.JobSucceeded), retry, dead}, nil); err != nil {
		t.Fatal(err)
	}
	for i, want := range []hub.JobStatus{hub.JobSucceeded, hub.JobPending, hub.JobDeadLettered} {
		if st := r.status(cs[i].Job.ID); st != want {
			t.Fatalf("job %d is %s, want %s", i, st, want)
		}
	}
	if held := l.leases.all(); len(held) != 0 {
		t.Fatalf("still renewing %v after their results were written", held)
	}
	if next, ok := l.due.next(); !ok || !next.Equal(retryAt) {
		t.Fatalf("the claim loop wakes at %v (%v), want the retry's %v", next, ok, retryAt)
	}
}

// A fenced result (its lease was lost: another process took the job
// over) is not the ledger's to wait for: no due time, no undrain; its
// lease is forgotten all the same.
func TestCompleter_FencedResultsAreNotWaitedFor(t *testing.T) {
	r := newPartsRig(t, 1)
	c, l, q := newTestCompleter(r, "disp_me", 8)
	j := job("j1", "ord", 1)
	l.enqueue(q, []store.Claimed{j})
	l.hints.claimed([]store.Claimed{j}, store.ClaimParams{Batch: 10, Run: 4}, l.hints.now())
	res := store.Completion{JobLease: store.JobLease{JobID: "j1", LeaseToken: "tok-j1"}, SubscriptionID: "ord",
		Status: hub.JobPending, NextAttemptAt: r.now().Add(time.Hour)}
	c.written([]store.Completion{res}, store.CompleteResult{Fenced: []string{"j1"}})
	if _, ok := l.due.next(); ok {
		t.Fatal("a fenced result's retry time was noted")
	}
	if len(l.hints.undrained([]string{"ord"})) != 0 {
		t.Fatal("a fenced result undrained its subscription")
	}
	if len(l.leases.all()) != 0 {
		t.Fatal("a fenced result's lease is still renewed")
	}
	// Not fenced: both noted.
	l.enqueue(q, []store.Claimed{j})
	c.written([]store.Completion{res}, store.CompleteResult{})
	if _, ok := l.due.next(); !ok || len(l.hints.undrained([]string{"ord"})) != 1 {
		t.Fatal("a retry written was not noted (due time, undrained)")
	}
}

// The hand-off claims, with a batch of results, the next jobs of the
// subscription they free, in the same transaction; placed queues them (an
// ordered subscription's join its run in flight, in order) and the ledger
// holds their leases.
func TestCompleter_HandOffTakesTheFreedSubscriptionsNextJobs(t *testing.T) {
	r := newPartsRig(t, 1)
	r.publish("e1", "e2", "e3")
	c, l, q := newTestCompleter(r, "disp_me", 8)
	first := r.claim(c.heart.id(), 10, time.Hour)
	if !slices.Equal(eventIDs(first), []string{"e1"}) {
		t.Fatalf("claimed %v, want e1 alone (ordered)", eventIDs(first))
	}
	l.enqueue(q, first)
	u := <-q.ch // a worker took e1's run, and sends it
	batch := []store.Completion{r.result(first[0], hub.JobSucceeded)}
	p, placed := c.handOff(batch)
	if p.Next == nil || !slices.Equal(p.Next.Subscriptions, []string{r.sub.ID}) || p.Next.Owner != c.heart.id() {
		t.Fatalf("hand-off %+v, want the next jobs of %s for this process", p.Next, r.sub.ID)
	}
	r.writeHandedOff(c, batch, p, placed)
	if len(q.ch) != 0 {
		t.Fatalf("%d units queued, want none: the next jobs join the run in flight", len(q.ch))
	}
	var got []store.Claimed
	for j, ok := l.runs.take(u.run); ok; j, ok = l.runs.take(u.run) {
		got = append(got, j)
	}
	if !slices.Equal(eventIDs(got), []string{"e2", "e3"}) {
		t.Fatalf("the run's next jobs %v, want e2, e3", eventIDs(got))
	}
	for _, j := range got {
		if !l.leases.held(j.Job.ID, j.LeaseToken) || r.status(j.Job.ID) != hub.JobInFlight {
			t.Fatalf("job %s: held %v, %s; want held here, in flight", j.Event.ID, l.leases.held(j.Job.ID, j.LeaseToken),
				r.status(j.Job.ID))
		}
	}
	if r.status(first[0].Job.ID) != hub.JobSucceeded {
		t.Fatal("the batch's result was not recorded")
	}
}

// No hand-off while a claim across all subscriptions is due (the freed
// subscriptions are left to the next claim instead), nor once the stop
// began.
func TestCompleter_NoHandOffWhileAFullClaimIsDueOrOnceStopping(t *testing.T) {
	r := newPartsRig(t, 1)
	c, l, _ := newTestCompleter(r, "disp_me", 8)
	batch := []store.Completion{{JobLease: store.JobLease{JobID: "j1", LeaseToken: "t"}, SubscriptionID: "s1",
		Status: hub.JobSucceeded}}
	l.fullWanted.Store(true)
	p, placed := c.handOff(batch)
	if p.Next != nil {
		t.Fatal("handed off while a full claim was due")
	}
	placed(nil, true)
	if got := l.hints.take(); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("the next claim names %v, want [s1]", got)
	}
	l.fullWanted.Store(false)
	if p, placed := c.handOff(batch); p.Next == nil {
		t.Fatal("no hand-off though nothing stood in its way")
	} else {
		placed(nil, false)
	}
	if err := c.gate.stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.handOff(batch); p.Next != nil {
		t.Fatal("handed off once the stop began")
	}
}

// A hand-off freeing several ordered subscriptions takes a whole run of
// each (RunLength jobs), not a claim batch shared out among them: with a
// batch of 4 over four subscriptions each got one job, and went back to
// the writer for its next after every attempt.
func TestCompleter_AHandOffTakesAWholeRunOfEachFreedSubscription(t *testing.T) {
	r := newPartsRig(t, 1)
	r.cfg.ClaimBatch, r.cfg.RunLength = 4, 6
	tenants := []string{"acme", "beta", "gamma", "delta"}
	for _, tenant := range tenants[1:] {
		if _, err := r.store.CreateTenant(r.ctx, store.CreateTenantParams{ID: tenant, Name: tenant}); err != nil {
			t.Fatal(err)
		}
		s := storetest.NewSubscription(tenant, "sub_"+tenant)
		s.VerificationState, s.MaxInFlight = hub.VerificationActive, 1
		if _, err := r.store.CreateSubscription(r.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	var evs []hub.Event
	for _, tenant := range tenants {
		for i := range 6 {
			evs = append(evs, storetest.NewEvent(tenant, fmt.Sprintf("%s-%d", tenant, i)))
		}
	}
	if _, err := r.store.Ingest(r.ctx, store.IngestParams{Events: evs}); err != nil {
		t.Fatal(err)
	}
	c, l, q := newTestCompleter(r, "disp_me", 8)
	first := r.claim(c.heart.id(), 4, time.Hour)
	if len(first) != 4 {
		t.Fatalf("claimed %v, want the first job of each subscription", eventIDs(first))
	}
	l.enqueue(q, first)
	runs := map[string]*run{}
	for range first {
		u := <-q.ch // workers took each run, and send its first job
		runs[u.first.Job.TenantID] = u.run
	}
	var batch []store.Completion
	for _, j := range first {
		batch = append(batch, r.result(j, hub.JobSucceeded))
	}
	p, placed := c.handOff(batch)
	r.writeHandedOff(c, batch, p, placed)
	for _, tenant := range tenants {
		var got []string
		for j, ok := l.runs.take(runs[tenant]); ok; j, ok = l.runs.take(runs[tenant]) {
			got = append(got, j.Event.ID)
		}
		want := []string{tenant + "-1", tenant + "-2", tenant + "-3", tenant + "-4", tenant + "-5"}
		if !slices.Equal(got, want) {
			t.Errorf("%s's run goes on with %v, want its other five jobs %v", tenant, got, want)
		}
	}
}

// writeHandedOff writes batch with its hand-off p, as the writer does,
// and tells placed and c what was written.
func (r *partsRig) writeHandedOff(c *completer, batch []store.Completion, p store.CompleteParams, placed func([]store.Claimed, bool)) {
	r.t.Helper()
	p.Completions = batch
	res, err := r.store.CompleteJobs(r.ctx, p)
	if err != nil {
		r.t.Fatal(err)
	}
	placed(res.Claimed, true)
	c.written(batch, res)
}
