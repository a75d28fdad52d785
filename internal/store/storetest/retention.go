package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func eventIDs(evs []hub.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

func (e env) prune(t testing.TB, p store.PruneParams) store.PruneResult {
	t.Helper()
	r, err := e.store.Prune(e.ctx, p)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	return r
}

func testRetention(t *testing.T, open Opener) {
	const week = 7 * 24 * time.Hour

	// Events past retention go only when no job may still send them;
	// succeeded jobs and dead letters go by their own bounds, with their
	// attempts.
	t.Run("DeletesOnlyWhatNoJobNeeds", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		e.subscribe(t, "acme", "sub_1", 10)
		e.publish(t, "acme", "a", 4)   // a-00000..a-00003, a job each
		e.publish(t, "globex", "g", 1) // no subscription: no job
		cs := e.claim(t, 4)
		slices.SortFunc(cs, func(a, b store.Claimed) int { return int(a.Job.EventSequence - b.Job.EventSequence) })
		dead := store.Completion{JobLease: store.JobLease{JobID: cs[1].Job.ID, LeaseToken: cs[1].LeaseToken}, Status: hub.JobDeadLettered,
			DeadLetterReason: hub.DeadLetterExhausted, SubscriptionID: "sub_1",
			Attempt: &hub.Attempt{ID: hub.NewID("att", e.clock.Now()), StartedAt: e.clock.Now(), StatusCode: 500}}
		// a-0 succeeds, a-1 is dead-lettered, a-2 waits for a retry in a
		// month, a-3 stays in flight.
		e.complete(t, e.succeeded(cs[0]), dead, e.failed(cs[2], e.clock.Now().Add(30*24*time.Hour)))
		e.clock.Advance(2 * 24 * time.Hour)
		e.publish(t, "globex", "recent", 1)
		e.clock.Advance(6 * 24 * time.Hour) // a-*, g-0: 8 days old; recent-0: 6

		r := e.prune(t, store.PruneParams{EventsBefore: e.clock.Now().Add(-week)})
		// The third is the operational event that reported the dead
		// letter
		// (docs/insight.md),
		// which no job needs either.
		if r != (store.PruneResult{Events: 3}) {
			t.Fatalf("Prune = %+v, want the 3 events no job needs (a-00000, g-00000, the hub.delivery.dead_lettered)", r)
		}
		if got := eventIDs(e.events(t, "acme")); !slices.Equal(got, []string{"a-00001", "a-00002", "a-00003"}) {
			t.Fatalf("acme's events left: %v (the dead letter's, the pending and the in-flight job's)", got)
		}
		if got := eventIDs(e.events(t, "globex")); !slices.Equal(got, []string{"recent-00000"}) {
			t.Fatalf("globex's events left: %v", got)
		}
		// The succeeded job outlives its event, which cannot be replayed.
		if _, err := e.store.ReplayJob(e.ctx, "acme", cs[0].Job.ID, "admin"); hub.ErrorCode(err) != hub.ECONFLICT {
			t.Fatalf("replay of a job whose event is gone: %v, want conflict", err)
		}

		r = e.prune(t, store.PruneParams{SucceededBefore: e.clock.Now().Add(-week), DeadLettersBefore: e.clock.Now().Add(-10 * 24 * time.Hour),
			EventsBefore: e.clock.Now().Add(-week)})
		if r != (store.PruneResult{SucceededJobs: 1}) {
			t.Fatalf("Prune = %+v, want the succeeded job only (the dead letter is 8 days old, kept 10)", r)
		}
		if _, _, err := e.store.GetJob(e.ctx, "acme", cs[0].Job.ID); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("the pruned job: %v", err)
		}
		if j, as := e.job(t, "acme", cs[1].Job.ID); j.Status != hub.JobDeadLettered || len(as) != 1 {
			t.Fatalf("the dead letter: %+v, %d attempts", j, len(as))
		}

		// Once the dead letter goes, its event goes in the same call.
		r = e.prune(t, store.PruneParams{DeadLettersBefore: e.clock.Now().Add(-week), EventsBefore: e.clock.Now().Add(-week)})
		if r != (store.PruneResult{DeadLetters: 1, Events: 1}) {
			t.Fatalf("Prune = %+v, want the dead letter and its event", r)
		}
		if got := eventIDs(e.events(t, "acme")); !slices.Equal(got, []string{"a-00002", "a-00003"}) {
			t.Fatalf("acme's events left: %v (the live jobs')", got)
		}
		if c, err := e.store.CountJobs(e.ctx); err != nil || c[hub.JobPending] != 1 || c[hub.JobInFlight] != 1 || c[hub.JobDeadLettered] != 0 {
			t.Fatalf("jobs left: %v, %v", c, err)
		}
		// Even with every bound at now, live jobs and their events stay.
		if r := e.prune(t, store.PruneParams{SucceededBefore: e.clock.Now(), DeadLettersBefore: e.clock.Now(), EventsBefore: e.clock.Now()}); r != (store.PruneResult{Events: 1}) {
			t.Fatalf("Prune = %+v, want only globex's jobless recent-00000", r)
		}
		if got := eventIDs(e.events(t, "acme")); !slices.Equal(got, []string{"a-00002", "a-00003"}) {
			t.Fatalf("acme's events left: %v (the live jobs')", got)
		}
	})

	// A pruned job takes its attempt log with it; nothing else's goes.
	t.Run("PrunedJobsTakeTheirAttemptsWithThem", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 2)
		e.publish(t, "acme", "a", 2)
		cs := e.claim(t, 2)
		if len(cs) != 2 {
			t.Fatalf("claimed %d, want 2", len(cs))
		}
		e.complete(t, e.succeeded(cs[0]), e.failed(cs[1], e.clock.Now().Add(time.Hour)))
		e.clock.Advance(time.Hour)
		if r := e.prune(t, store.PruneParams{SucceededBefore: e.clock.Now()}); r != (store.PruneResult{SucceededJobs: 1}) {
			t.Fatalf("Prune = %+v, want the succeeded job", r)
		}
		if jobs, attempts := e.rows(t, "delivery_jobs"), e.rows(t, "delivery_attempts"); jobs != 1 || attempts != 1 {
			t.Fatalf("left %d jobs and %d attempts, want the pending job and its one attempt", jobs, attempts)
		}
		if _, as := e.job(t, "acme", cs[1].Job.ID); len(as) != 1 {
			t.Fatalf("the job left has %d attempts, want its 1", len(as))
		}
	})

	t.Run("BoundedBatches", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.publish(t, "acme", "a", 5)
		e.clock.Advance(8 * 24 * time.Hour)
		p := store.PruneParams{EventsBefore: e.clock.Now().Add(-week), Batch: 2}
		var got []store.PruneResult
		for range 3 {
			got = append(got, e.prune(t, p))
		}
		want := []store.PruneResult{{Events: 2}, {Events: 2}, {Events: 1}}
		if fmt.Sprint(got) != fmt.Sprint(want) || !got[0].Full(2) || !got[1].Full(2) || got[2].Full(2) {
			t.Fatalf("passes deleted %v, want %v", got, want)
		}
		if got := e.events(t, "acme"); len(got) != 0 {
			t.Fatalf("%d events left", len(got))
		}
	})

	t.Run("ExclusiveRunsOneHolderAtATime", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		boom := errors.New("boom")
		var inner, other bool
		ran, err := e.store.Exclusive(e.ctx, "prune", func(ctx context.Context) error {
			var err error
			if inner, err = e.store.Exclusive(ctx, "prune", func(context.Context) error { return nil }); err != nil {
				return err
			}
			other, err = e.store.Exclusive(ctx, "stats", func(context.Context) error { return nil })
			if err != nil {
				return err
			}
			return boom
		})
		if !ran || !errors.Is(err, boom) {
			t.Fatalf("Exclusive = %v, %v; want it ran and returned fn's error", ran, err)
		}
		if inner || !other {
			t.Fatalf("while held: the same name ran %v (want false), another name ran %v (want true)", inner, other)
		}
		if ran, err := e.store.Exclusive(e.ctx, "prune", func(context.Context) error { return nil }); !ran || err != nil {
			t.Fatalf("after release: %v, %v", ran, err)
		}
	})
}
