package dispatch_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// sequences are the X-Lerian-Sequence headers of what the sink answered
// 2xx, in arrival order.
func (s *sink) sequences(t testing.TB) []int {
	t.Helper()
	var out []int
	for _, r := range s.got() {
		n, err := strconv.Atoi(r.header.Get("X-Lerian-Sequence"))
		if err != nil {
			t.Fatalf("X-Lerian-Sequence %q", r.header.Get("X-Lerian-Sequence"))
		}
		out = append(out, n)
	}
	return out
}

// Two processes, one whose breaker for the destination is open and one
// whose breaker is closed (each process has breakers of its own): a job
// the first sheds keeps its place, so the second does not deliver the
// subscription's later events before it (docs/delivery.md#ordering).
func TestHold_AShedJobKeepsItsPlaceAcrossProcesses(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		open, err := dispatch.NewBreakers(config.Breaker{Failures: 1, OpenFor: time.Minute, MaxOpen: 10 * time.Minute}, r.clock.Now, metrics.New())
		if err != nil {
			t.Fatal(err)
		}
		open.Record("acme", r.sub.Destination.Address(), false) // this process saw the destination fail
		shedding, err := dispatch.New(dispatch.Config{Dispatch: config.Defaults(config.Serve).Dispatch, Store: r.store,
			Keyring: r.keyring, Metrics: metrics.New(), Now: r.clock.Now, Destinations: r.d2destinations(), Breakers: open})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			r.publish(event("acme", "evt-"+strconv.Itoa(i)))
		}
		if n, err := shedding.Step(r.ctx); err != nil || n != 1 {
			t.Fatalf("the shedding process stepped %d (%v), want the oldest job, shed", n, err)
		}
		if got := r.sink.sequences(t); len(got) != 0 {
			t.Fatalf("a shed job was sent: %v", got)
		}
		// The healthy process finds nothing due: the later jobs wait with
		// the shed one.
		if n := r.step(); n != 0 {
			t.Fatalf("the other process stepped %d jobs while the oldest was shed: delivered %v", n, r.sink.sequences(t))
		}
		r.clock.Advance(time.Minute)
		for r.step() > 0 {
		}
		got := r.sink.sequences(t)
		if len(got) != 4 {
			t.Fatalf("delivered %v, want all four", got)
		}
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				t.Fatalf("first receipts out of arrival order: %v", got)
			}
		}
	})
}

// lostAnswer is a store whose writes of results, once asked to, commit
// a batch and then answer an error, as a connection cut right after the
// COMMIT does; permanent makes it refuse for good every batch holding a
// job of that event sequence.
type lostAnswer struct {
	dispatch.Store
	read      store.Store
	lose      atomic.Bool
	permanent atomic.Int64
	mu        sync.Mutex
	failures  int
}

func (s *lostAnswer) Write(ctx context.Context, p store.WriteParams) (store.WriteResult, error) {
	if len(p.Complete.Completions) == 0 {
		return s.Store.Write(ctx, p)
	}
	if seq := s.permanent.Load(); seq != 0 {
		for _, c := range p.Complete.Completions {
			j, _, err := s.read.GetJob(ctx, "acme", c.JobID)
			if err == nil && j.EventSequence == seq {
				s.fail()
				return store.WriteResult{}, store.Permanent(errors.New("value out of range"))
			}
		}
	}
	res, err := s.Store.Write(ctx, p)
	if err != nil {
		s.fail()
		return res, err
	}
	if s.lose.CompareAndSwap(true, false) {
		s.fail()
		return store.WriteResult{}, errors.New("read tcp: connection reset by peer")
	}
	return res, nil
}

func (s *lostAnswer) fail() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures++
}

func (s *lostAnswer) failed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failures
}

// A result batch whose COMMIT went through but whose answer was lost is
// recognised when written again: the job succeeded once, its attempt is
// logged once, and the completer goes on (readiness stays up) instead of
// retrying a write that can only fail on its own rows.
func TestHold_AResultWrittenOnceWhenItsCommitsAnswerIsLost(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		var s *lostAnswer
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
			s = &lostAnswer{Store: c.Store, read: c.Store.(store.Store)}
			c.Store = s
		}})
		s.lose.Store(true)
		r.publish(event("acme", "evt-1"))
		r.run()
		testkit.WaitFor(t, "the result recorded, and no write failing", func() bool {
			j, _ := r.onlyJob()
			return j.Status == hub.JobSucceeded && !s.lose.Load() && r.d.Unwritten(r.ctx) == nil
		})
		r.publish(event("acme", "evt-2")) // the completer goes on
		testkit.WaitFor(t, "the next event delivered", func() bool { return len(r.sink.got()) == 2 })
		jobs, err := r.store.ListJobs(r.ctx, listParams(r))
		if err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "both results recorded", func() bool {
			jobs, _ = r.store.ListJobs(r.ctx, listParams(r))
			return len(jobs) == 2 && jobs[0].Status == hub.JobSucceeded && jobs[1].Status == hub.JobSucceeded
		})
		for _, j := range jobs {
			_, as, _ := r.store.GetJob(r.ctx, "acme", j.ID)
			if len(as) != 1 || j.Attempts != 1 {
				t.Errorf("job %s: %d attempts logged (attempts %d), want 1", j.ID, len(as), j.Attempts)
			}
		}
		if n := s.failed(); n != 1 {
			t.Errorf("%d failed result writes, want only the one whose answer was lost", n)
		}
	})
}

// A result the database refuses for good is found by splitting its batch,
// and given up (its job given back later by the lease sweep), counted and
// logged; the other results
// of the batch are written, and readiness stays up.
func TestHold_AResultRefusedForGoodIsGivenUpNotRetriedForever(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		var s *lostAnswer
		r := newRig(t, d, rigOptions{maxInFlight: 8, cfg: func(c *dispatch.Config) {
			s = &lostAnswer{Store: c.Store, read: c.Store.(store.Store)}
			c.Store = s
		}})
		// The sink answers only once all four are in: their results come
		// together, in one batch.
		var n atomic.Int32
		all := make(chan struct{})
		r.sink.script(func(int, *http.Request) (int, http.Header, string) {
			if n.Add(1) == 4 {
				close(all)
			}
			<-all
			return 200, nil, "ok"
		})
		for i := range 4 {
			r.publish(event("acme", "evt-"+strconv.Itoa(i)))
		}
		s.permanent.Store(2) // the second event's result cannot be written
		r.run()
		var jobs []hub.Job
		testkit.WaitFor(t, "the refused result given up and the others written", func() bool {
			var err error
			if jobs, err = r.store.ListJobs(r.ctx, listParams(r)); err != nil || testutil.ToFloat64(r.metrics.ResultsGivenUp) != 1 {
				return false
			}
			done := 0
			for _, j := range jobs {
				if j.Status == hub.JobSucceeded {
					done++
				}
			}
			return done == 3
		})
		for _, j := range jobs {
			want := hub.JobSucceeded
			if j.EventSequence == 2 {
				want = hub.JobInFlight // until the lease sweep gives it back
			}
			if j.Status != want {
				t.Errorf("job of sequence %d is %s, want %s", j.EventSequence, j.Status, want)
			}
		}
		if err := r.d.Unwritten(r.ctx); err != nil {
			t.Errorf("readiness: %v", err)
		}
		if f := s.failed(); f > 3 {
			t.Errorf("%d failed writes: splitting four results to find one takes at most three", f)
		}
	})
}

// A breaker that closed in one process (its probe passed) closes, through
// the database, the breaker of another process that still had it open:
// that one delivers the woken backlog instead of shedding it again and
// holding the subscription until its own probe time. PostgreSQL only: an
// SQLite file serves one process.
func TestHold_ABreakerClosedInOneProcessClosesAnothers(t *testing.T) {
	d := testkit.Drivers[0]
	if d.Name != "postgres" {
		t.Fatal("the first driver is not PostgreSQL")
	}
	r := newRig(t, d, rigOptions{})
	stale, err := dispatch.NewBreakers(config.Breaker{Failures: 1, OpenFor: time.Hour, MaxOpen: time.Hour}, r.clock.Now, metrics.New())
	if err != nil {
		t.Fatal(err)
	}
	stale.Record("acme", r.sub.Destination.Address(), false) // opened an hour ago, for an hour
	other, err := dispatch.New(dispatch.Config{Dispatch: config.Defaults(config.Serve).Dispatch, Store: r.store,
		Keyring: r.keyring, Metrics: metrics.New(), Now: r.clock.Now, Destinations: r.d2destinations(), Breakers: stale})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r.publish(event("acme", "evt-"+strconv.Itoa(i)))
	}
	if n, err := other.Step(r.ctx); err != nil || n != 1 {
		t.Fatalf("stepped %d (%v): want the oldest job, shed", n, err)
	}
	r.clock.Advance(time.Minute)
	// This process's breaker for the destination closed (a verify passed,
	// or its probe): it wakes the subscription.
	if err := r.d.Verified(r.ctx, r.sub); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Millisecond)
	for {
		n, err := other.Step(r.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	if got := r.sink.sequences(t); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("the process whose breaker had been open delivered %v, want [1 2 3]: it should have learnt of the heal", got)
	}
	if s := stale.State("acme", r.sub.Destination.Address()); s != dispatch.BreakerClosed {
		t.Fatalf("its breaker is %s, want closed", s)
	}
}
