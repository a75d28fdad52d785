package dispatch_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// watchedStore counts the claims (the claim loop's and the completions'
// hand-offs) made after the test marked the stop, and can fail every
// completion.
type watchedStore struct {
	dispatch.Store
	mu          sync.Mutex
	stopped     bool
	late        int
	completions int
	fail        bool
}

func (w *watchedStore) ClaimJobs(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	w.mu.Lock()
	if w.stopped {
		w.late++
	}
	w.mu.Unlock()
	return w.Store.ClaimJobs(ctx, p)
}

func (w *watchedStore) Write(ctx context.Context, p store.WriteParams) (store.WriteResult, error) {
	if len(p.Complete.Completions) == 0 {
		return w.Store.Write(ctx, p)
	}
	w.mu.Lock()
	w.completions++
	if w.stopped && p.Complete.Next != nil {
		w.late++
	}
	fail := w.fail
	w.mu.Unlock()
	if fail {
		return store.WriteResult{}, errors.New("database unreachable")
	}
	return w.Store.Write(ctx, p)
}

func (w *watchedStore) markStopped() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
}

func (w *watchedStore) counts() (late, completions int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.late, w.completions
}

// Once Stop returns nothing is claimed: the attempt in flight finishes and
// is recorded, and the job that became due when it finished (one in
// flight at a time) is neither handed off nor claimed, and is left pending.
func TestStop_NothingIsClaimedAfterItAndTheAttemptInFlightIsRecorded(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		var w *watchedStore
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
			w = &watchedStore{Store: c.Store}
			c.Store, c.IdleInterval = w, time.Millisecond // the claim loop polls all the time
		}})
		started := make(chan struct{}, 1)
		answer := make(chan struct{})
		r.sink.script(func(n int, _ *http.Request) (int, http.Header, string) {
			if n == 1 {
				started <- struct{}{}
				<-answer
			}
			return 200, nil, ""
		})
		r.publish(event("acme", "evt-1"), event("acme", "evt-2"))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- r.d.Run(ctx) }()
		<-started

		sctx, scancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer scancel()
		if err := r.d.Stop(sctx); err != nil {
			t.Fatal(err)
		}
		w.markStopped()
		close(answer)
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-sctx.Done():
			t.Fatal("Run did not return after Stop and the attempt's end")
		}

		if late, _ := w.counts(); late != 0 || len(r.sink.got()) != 1 {
			t.Fatalf("%d claims after Stop returned, %d requests", late, len(r.sink.got()))
		}
		jobs, err := r.store.ListJobs(r.ctx, listParams(r))
		if err != nil || len(jobs) != 2 {
			t.Fatalf("jobs %+v, %v", jobs, err)
		}
		for _, j := range jobs {
			switch j.EventID {
			case "evt-1":
				if j.Status != hub.JobSucceeded || j.Attempts != 1 {
					t.Fatalf("the attempt in flight: %+v", j)
				}
			case "evt-2":
				if j.Status != hub.JobPending || j.Attempts != 0 {
					t.Fatalf("the job due after the stop: %+v", j)
				}
			}
		}
	})
}

// A result write that keeps failing is retried, records going on
// meanwhile, and a Run whose context ended returns within its bounded
// drain: a stopping process is not held by a database that is gone.
func TestRun_ResultRetriesEndWithTheContext(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		var w *watchedStore
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
			w = &watchedStore{Store: c.Store, fail: true}
			c.Store = w
		}})
		r.publish(event("acme", "evt-1"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.d.Run(ctx) }()
		testkit.WaitFor(t, "the failed write retried", func() bool { _, n := w.counts(); return n >= 2 })
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(testkit.Patience + dispatch.LastTry):
			t.Fatal("Run kept retrying after its context ended")
		}
		if len(r.sink.got()) != 1 {
			t.Fatalf("%d requests", len(r.sink.got()))
		}
		if j, _ := r.onlyJob(); j.Status != hub.JobInFlight {
			t.Fatalf("the job is %s; want still in flight (its result was never written)", j.Status)
		}
	})
}

// A claim whose answer was lost is looked for again (store.Reclaim) while
// the database is away, but not past the stop: Stop returns though the
// database never comes back (a shutdown is not held by it), and Run
// returns once its context ends.
func TestStop_ReturnsWhileTheDatabaseStaysAway(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		var o *outageStore
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
			o = &outageStore{Store: c.Store}
			c.Store, c.IdleInterval = o, time.Millisecond // the claim loop polls all the time
		}})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- r.d.Run(ctx) }()
		r.publish(event("acme", "evt-1"))
		testkit.WaitFor(t, "the hub delivering", func() bool { return len(r.sink.got()) == 1 })
		o.set(true)
		testkit.WaitFor(t, "a lost claim looked for again", func() bool { return o.failedReclaims() >= 2 })

		sctx, scancel := context.WithTimeout(context.Background(), testkit.Patience)
		defer scancel()
		if err := r.d.Stop(sctx); err != nil {
			t.Fatalf("Stop with the database away: %v", err)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(testkit.Patience + dispatch.LastTry):
			t.Fatal("Run did not return after Stop and the end of its context")
		}
	})
}
