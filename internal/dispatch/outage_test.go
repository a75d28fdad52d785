package dispatch_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// outageStore is the real store behind a switch that makes every call the
// dispatcher makes fail, as a database that cannot be reached does; it
// counts the maintenance passes made while the database answers.
type outageStore struct {
	dispatch.Store
	mu       sync.Mutex
	down     bool
	passes   int // maintenance passes that reached the database
	reclaims int // Reclaim calls made while the database was away
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

func (o *outageStore) Reclaim(ctx context.Context, token string) ([]store.Claimed, error) {
	o.mu.Lock()
	down := o.down
	if down {
		o.reclaims++
	}
	o.mu.Unlock()
	if down {
		return nil, errUnreachable
	}
	return o.Store.Reclaim(ctx, token)
}

func (o *outageStore) failedReclaims() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reclaims
}

func (o *outageStore) Write(ctx context.Context, p store.WriteParams) (store.WriteResult, error) {
	if o.isDown() {
		return store.WriteResult{}, errUnreachable
	}
	return o.Store.Write(ctx, p)
}

func (o *outageStore) ResultsRecorded(ctx context.Context, cs []store.Completion) ([]string, error) {
	if o.isDown() {
		return nil, errUnreachable
	}
	return o.Store.ResultsRecorded(ctx, cs)
}

func (o *outageStore) Heartbeat(ctx context.Context, id string, register bool) (bool, error) {
	if o.isDown() {
		return false, errUnreachable
	}
	return o.Store.Heartbeat(ctx, id, register)
}

func (o *outageStore) RecoverLeases(ctx context.Context, p store.RecoverParams) (store.RecoverResult, error) {
	if o.isDown() {
		return store.RecoverResult{}, errUnreachable
	}
	return o.Store.RecoverLeases(ctx, p)
}

func (o *outageStore) LeasedTo(ctx context.Context, owner string, before time.Time) ([]store.LeasedJob, error) {
	if o.isDown() {
		return nil, errUnreachable
	}
	return o.Store.LeasedTo(ctx, owner, before)
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
// away for three heartbeat leases, long enough for the process's
// heartbeat to lapse in the database. The result is retried all along;
// when the database is back the process renews its heartbeat (its row was
// not taken over: nobody could reach the database either), maintenance
// passes run with recovery allowed, yet the job is not taken over: it is
// attempted once, and recorded as that one successful attempt
// (docs/delivery.md, "Crashes").
func TestOutage_AnAnsweredJobIsNeverAttemptedAgain(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		const lease = time.Second
		var o *outageStore
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
			o = &outageStore{Store: c.Store}
			c.Store = o
			c.Lease = lease
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
		r.publish(event("acme", "evt-1"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.d.Run(ctx) }()
		defer func() {
			cancel()
			<-done
		}()
		<-answered
		// Three leases pass, in the database's eyes and on the real clock.
		testkit.WaitFor(t, "the process fenced itself for lack of a heartbeat", func() bool {
			return testutil.ToFloat64(r.metrics.HeartbeatFences) >= 1
		})
		r.clock.Advance(3 * lease)
		time.Sleep(3 * lease)
		renewals := testutil.ToFloat64(r.metrics.Heartbeats.WithLabelValues("ok"))
		o.set(false)
		testkit.WaitFor(t, "the heartbeat renewed", func() bool {
			return testutil.ToFloat64(r.metrics.Heartbeats.WithLabelValues("ok")) > renewals
		})
		// Recovery is allowed once the store answered for a lease.
		time.Sleep(lease)
		before := o.maintained()
		testkit.WaitFor(t, "three maintenance passes with the database back", func() bool { return o.maintained() >= before+3 })
		testkit.WaitFor(t, "the result recorded", func() bool {
			j, _ := r.onlyJob()
			return j.Status == hub.JobSucceeded
		})
		j, attempts := r.onlyJob()
		if n := len(r.sink.got()); n != 1 || j.Attempts != 1 || len(attempts) != 1 || attempts[0].StatusCode != 200 {
			t.Fatalf("%d requests; job %+v with attempts %+v: want one attempt, answered 200", n, j, attempts)
		}
		if n := testutil.ToFloat64(r.metrics.Redeliveries.WithLabelValues("unwritten_result")); n != 0 {
			t.Errorf("%v redeliveries counted; want none", n)
		}
	})
}

// The database goes away while an attempt is under way, and stays away
// past the heartbeat's fence: the process cancels the attempt, whose
// request had reached the receiver. When the database is back the job,
// still this process's, is sent again, and that re-send is counted once,
// in streaming_hub_redeliveries_total{reason="fenced"}, by this process
// (docs/operations.md, "What a crash, a freeze and an outage cost"): the
// redeliveries counted equal the re-sends.
func TestOutage_AnAttemptCanceledAtTheFenceIsCountedWhenSentAgain(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		const lease = time.Second
		var o *outageStore
		var r *rig
		r = newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
			o = &outageStore{Store: c.Store}
			c.Store = o
			c.Lease = lease
			c.MaintenanceInterval = 5 * time.Millisecond
		}})
		fenced := func() bool { return testutil.ToFloat64(r.metrics.HeartbeatFences) >= 1 }
		r.sink.script(func(n int, _ *http.Request) (int, http.Header, string) {
			if n == 1 {
				// The first request reached the receiver; the database
				// goes away and the receiver holds its answer until the
				// process has stopped attempting.
				o.set(true)
				deadline := time.Now().Add(30 * time.Second)
				for !fenced() && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
			}
			return 200, nil, "ok"
		})
		r.publish(event("acme", "evt-1"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- r.d.Run(ctx) }()
		defer func() {
			cancel()
			<-done
		}()
		testkit.WaitFor(t, "the process fenced itself for lack of a heartbeat", fenced)
		o.set(false)
		testkit.WaitFor(t, "the job delivered again", func() bool {
			j, _ := r.onlyJob()
			return j.Status == hub.JobSucceeded
		})
		if n := len(r.sink.got()); n != 2 {
			t.Fatalf("the receiver got %d requests, want the canceled one and its re-send", n)
		}
		if n := testutil.ToFloat64(r.metrics.Redeliveries.WithLabelValues("fenced")); n != 1 {
			t.Errorf("%v redeliveries counted (fenced) for one re-send", n)
		}
		if n := testutil.ToFloat64(r.metrics.Redeliveries.WithLabelValues("unwritten_result")); n != 0 {
			t.Errorf("%v redeliveries counted (unwritten_result): nobody took the job over", n)
		}
	})
}
