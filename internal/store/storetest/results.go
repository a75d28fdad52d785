package storetest

import (
	"slices"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// shed is the completion of a job a breaker shed until at: no attempt.
func (e env) shed(c store.Claimed, at time.Time) store.Completion {
	return store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobPending,
		NextAttemptAt: at, LastError: c.Job.LastError, SubscriptionID: c.Job.SubscriptionID, Shed: true, Hold: true}
}

// testResults: results written again after a lost answer, and shed jobs
// keeping their place (docs/architecture.md, docs/delivery.md#ordering).
func testResults(t *testing.T, open Opener) {
	t.Run("ABatchWrittenTwiceLogsEachAttemptOnce", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 2)
		e.publish(t, "acme", "e", 2)
		c := e.claim(t, 16)
		if len(c) != 2 {
			t.Fatalf("claimed %d", len(c))
		}
		batch := []store.Completion{e.succeeded(c[0]), e.failed(c[1], e.clock.Now().Add(time.Minute))}
		e.complete(t, batch...)
		// The COMMIT went through but its answer was lost: the same batch
		// again. It must not fail on its own attempt rows.
		res, err := e.store.CompleteJobs(e.ctx, store.CompleteParams{Completions: batch})
		if err != nil {
			t.Fatalf("the same batch written again: %v", err)
		}
		if len(res.Fenced) != 2 {
			t.Errorf("written again, fenced %v: both results were written the first time", res.Fenced)
		}
		for i, cl := range c {
			j, as := e.job(t, "acme", cl.Job.ID)
			if len(as) != 1 || j.Attempts != 1 {
				t.Errorf("job %d: %d attempts logged, attempts %d; want one of each", i, len(as), j.Attempts)
			}
		}
	})

	t.Run("ResultsRecordedTellsWhatAnAmbiguousCommitWrote", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 4)
		e.publish(t, "acme", "e", 4)
		c := e.claim(t, 16)
		if len(c) != 4 {
			t.Fatalf("claimed %d", len(c))
		}
		written := e.succeeded(c[0])
		shedWritten := e.shed(c[1], e.clock.Now().Add(time.Minute))
		e.complete(t, written, shedWritten)
		unwritten, shedUnwritten := e.succeeded(c[2]), e.shed(c[3], e.clock.Now().Add(time.Minute))
		got, err := e.store.ResultsRecorded(e.ctx, []store.Completion{written, shedWritten, unwritten, shedUnwritten})
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		want := []string{c[0].Job.ID, c[1].Job.ID}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("recorded %v, want the two written %v", got, want)
		}

		// A lease lost to recovery, its attempt never logged: not recorded
		// (its result is still to be written, and will be fenced).
		e.clock.Advance(2 * time.Minute)
		e.recover(t)
		got, err = e.store.ResultsRecorded(e.ctx, []store.Completion{unwritten})
		if err != nil || len(got) != 0 {
			t.Fatalf("a result never written, its lease lost: recorded %v (%v)", got, err)
		}
	})

	t.Run("AShedJobHoldsItsOrderedSubscriptionsPlace", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_ordered", 1)
		e.publish(t, "acme", "e", 4)
		first := e.claim(t, 16)
		if seqs(first) != "[acme#1]" {
			t.Fatalf("claimed %s", seqs(first))
		}
		// Shed for a minute by one process's open breaker: the later jobs,
		// due now, must not be claimed (by any process) before it.
		e.complete(t, e.shed(first[0], e.clock.Now().Add(time.Minute)))
		if got := e.claim(t, 16); len(got) != 0 {
			t.Fatalf("after #1 was shed, %s was claimed before it", seqs(got))
		}
		e.clock.Advance(time.Minute)
		if got := seqs(e.claim(t, 16)); got != "[acme#1]" {
			t.Fatalf("once due again, the claim took %s, want #1 first", got)
		}
	})

	t.Run("AWakeLiftsTheHold", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		sub := e.subscribe(t, "acme", "sub_ordered", 1)
		e.publish(t, "acme", "e", 2)
		first := e.claim(t, 16)
		e.complete(t, e.shed(first[0], e.clock.Now().Add(time.Hour)))
		if got := e.claim(t, 16); len(got) != 0 {
			t.Fatalf("held, yet claimed %s", seqs(got))
		}
		// Another process's breaker closed: it wakes the subscription.
		if _, err := e.store.WakeJobs(e.ctx, []string{sub.ID}); err != nil {
			t.Fatal(err)
		}
		if got := seqs(e.claim(t, 16)); got != "[acme#1]" {
			t.Fatalf("after the wake, claimed %s, want #1 at once", got)
		}
	})

	t.Run("AShedJobHoldsBackNoUnorderedJobAndNoLaterRetry", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_many", 2)
		e.publish(t, "acme", "e", 3)
		c := e.claim(t, 16)
		if len(c) != 2 {
			t.Fatalf("claimed %s", seqs(c))
		}
		e.complete(t, e.shed(c[0], e.clock.Now().Add(time.Minute)), e.failed(c[1], e.clock.Now().Add(time.Hour)))
		if got := seqs(e.claim(t, 16)); got != "[acme#3]" {
			t.Fatalf("unordered: after a shed, claimed %s, want #3 (order is not promised above 1)", got)
		}

		e = setup(t, open, store.Options{})
		e.tenant(t, "beta", "")
		e.subscribe(t, "beta", "sub_b", 1)
		e.publish(t, "beta", "b", 2)
		one := e.claim(t, 16)
		if seqs(one) != "[beta#1]" {
			t.Fatalf("claimed %s", seqs(one))
		}
		e.complete(t, e.failed(one[0], e.clock.Now().Add(3*time.Hour)))
		two := e.claim(t, 16)
		if seqs(two) != "[beta#2]" {
			t.Fatalf("claimed %s", seqs(two))
		}
		e.complete(t, e.shed(two[0], e.clock.Now().Add(time.Minute)))
		e.clock.Advance(time.Minute)
		if got := seqs(e.claim(t, 16)); got != "[beta#2]" {
			t.Fatalf("a shed must not pull a later retry earlier: claimed %s, want only #2 (#1 waits for its retry)", got)
		}
	})
}
