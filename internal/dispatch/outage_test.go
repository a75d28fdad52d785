package dispatch_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// outageStore is the real store behind a switch that makes every call the
// dispatcher makes fail, as a database that cannot be reached does; it
// counts the maintenance passes made while the database answers.
type outageStore struct {
	dispatch.Store
	mu     sync.Mutex
	down   bool
	passes int // maintenance passes that reached the database
}

var errUnreachable = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func (o *outageStore) isDown() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down
}

func (o *outageStore) set(down bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = down
}

func (o *outageStore) maintained() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.passes
}

func (o *outageStore) ClaimJobs(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	if o.isDown() {
		return nil, errUnreachable
	}
	return o.Store.ClaimJobs(ctx, p)
}

func (o *outageStore) CompleteJobs(ctx context.Context, p store.CompleteParams) (store.CompleteResult, error) {
	if o.isDown() {
		return store.CompleteResult{}, errUnreachable
	}
	return o.Store.CompleteJobs(ctx, p)
}

func (o *outageStore) RenewLeases(ctx context.Context, p store.RenewParams) ([]string, error) {
	if o.isDown() {
		return nil, errUnreachable
	}
	return o.Store.RenewLeases(ctx, p)
}

func (o *outageStore) RecoverLeases(ctx context.Context, p store.RecoverParams) (store.RecoverResult, error) {
	if o.isDown() {
		return store.RecoverResult{}, errUnreachable
	}
	return o.Store.RecoverLeases(ctx, p)
}

func (o *outageStore) AutoDisable(ctx context.Context, g store.AutoDisable) ([]store.Disabled, error) {
	if o.isDown() {
		return nil, errUnreachable
	}
	return o.Store.AutoDisable(ctx, g)
}

func (o *outageStore) DeadLetterOrphans(ctx context.Context) (int, error) {
	if o.isDown() {
		return 0, errUnreachable
	}
	o.mu.Lock()
	o.passes++ // the last step of every pass
	o.mu.Unlock()
	return o.Store.DeadLetterOrphans(ctx)
}

// The database goes away right after an attempt was answered and stays
// away for three leases (90 s on the dispatcher's clock; the hub used to
// give a result up after about 6 s). The result is retried all along; when
// the database is back, maintenance passes run before the result is
// written, yet the job is not recovered: it is attempted once, and
// recorded as that one successful attempt.
func TestOutage_AnAnsweredJobIsNeverAttemptedAgain(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		var o *outageStore
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
			o = &outageStore{Store: c.Store}
			c.Store = o
			c.MaintenanceInterval = 5 * time.Millisecond // many passes, on the real clock
		}})
		answered := make(chan struct{})
		var once sync.Once
		r.sink.script(func(int, *http.Request) (int, http.Header, string) {
			once.Do(func() {
				o.set(true) // the database goes away while the receiver answers
				close(answered)
			})
			return 200, nil, "ok"
		})
		// Each retry of the result write waits on the dispatcher's clock:
		// the fake clock moves by the wait, and the test holds the retry
		// once the database is back, until maintenance has had its chance.
		var outage atomic.Int64 // of the clock, retried through
		resume := make(chan struct{})
		dispatch.SetAfter(r.d, func(wait time.Duration) <-chan time.Time {
			fire := make(chan time.Time, 1)
			if time.Duration(outage.Load()) < 3*30*time.Second {
				outage.Add(int64(wait))
				r.clock.Advance(wait)
				fire <- r.clock.Now()
				return fire
			}
			go func() { <-resume; fire <- r.clock.Now() }()
			return fire
		})
		r.publish(event("acme", "evt-1"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.d.Run(ctx) }()
		defer func() {
			cancel()
			<-done
		}()
		<-answered
		testkit.WaitFor(t, "the result retried through three leases of outage", func() bool {
			return time.Duration(outage.Load()) >= 3*30*time.Second
		})
		o.set(false)
		before := o.maintained()
		testkit.WaitFor(t, "three maintenance passes with the database back", func() bool { return o.maintained() >= before+3 })
		close(resume)
		testkit.WaitFor(t, "the result recorded", func() bool {
			j, _ := r.onlyJob()
			return j.Status == hub.JobSucceeded
		})
		j, attempts := r.onlyJob()
		if n := len(r.sink.got()); n != 1 || j.Attempts != 1 || len(attempts) != 1 || attempts[0].StatusCode != 200 {
			t.Fatalf("%d requests; job %+v with attempts %+v: want one attempt, answered 200", n, j, attempts)
		}
	})
}
