package dispatch_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// countingStore counts the claims a dispatcher makes.
type countingStore struct {
	store.Store
	claims atomic.Int64
}

func (s *countingStore) ClaimJobs(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	s.claims.Add(1)
	return s.Store.ClaimJobs(ctx, p)
}

// Jobs born leased in the ingest transaction are delivered with no claim
// at all (docs/architecture.md, "The writer"): an ordered
// subscription's events, published one by one while the earlier ones are
// in flight here, arrive once each and in order, and their results are
// written.
func TestBirths_JobsBornLeasedAreDeliveredInOrderWithoutAClaim(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		counted := &countingStore{}
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) { counted.Store = c.Store.(store.Store); c.Store = counted }})
		r.sink.script(func(int, *http.Request) (int, http.Header, string) {
			time.Sleep(20 * time.Millisecond) // a receiver that thinks: later events are born behind the one in flight
			return 200, nil, "ok"
		})
		idle := noIdlePoll(r)
		runUntilDone(t, r)
		waitIdle(t, idle) // the start's claim found nothing
		// On PostgreSQL the listening connection, once up, makes one claim
		// across all subscriptions for what it may have missed: that one
		// may fall after this point.
		catchUp := int64(0)
		if _, ok := counted.Store.(interface{ ListenerPID() uint32 }); ok {
			catchUp = 1
		}
		before := counted.claims.Load()
		const n = 12
		for i := range n {
			r.publish(event("acme", fmt.Sprintf("evt-%02d", i)))
		}
		waitRequests(t, r.sink, n, "born jobs were not delivered")
		var order []string
		for _, q := range r.sink.got() {
			order = append(order, q.header.Get("X-Lerian-Event-Id"))
		}
		for i, id := range order {
			if want := fmt.Sprintf("evt-%02d", i); id != want || i >= n {
				t.Fatalf("received %v; want evt-00 .. evt-%02d once each, in order", order, n-1)
			}
		}
		if got := counted.claims.Load() - before; got > catchUp {
			t.Errorf("%d claims for jobs born leased to this dispatcher; want none (but the listener's catch-up)", got)
		}
		if got := testutil.ToFloat64(r.metrics.JobsBorn); got != n {
			t.Errorf("streaming_hub_jobs_born_total %v, want %d", got, n)
		}
		// The results are written behind: every job ends succeeded.
		for deadline := time.Now().Add(testkit.Patience); ; time.Sleep(10 * time.Millisecond) {
			jobs, err := r.store.ListJobs(r.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: r.sub.ID, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			done := 0
			for _, j := range jobs {
				if j.Status == hub.JobSucceeded {
					done++
				}
			}
			if done == n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d jobs recorded succeeded", done, n)
			}
		}
	})
}

// A lease that expires before its result was written is a redelivery:
// the job is sent again though its receiver may have it, and the process
// that recovers it counts it (unwritten_result).
func TestBirths_ALeaseRecoveredCountsAsARedelivery(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		r.publish(event("acme", "evt-1"))
		// Another process claimed it and died with its result unwritten.
		if c, err := r.store.ClaimJobs(r.ctx, store.ClaimParams{Batch: 1, Lease: time.Second}); err != nil || len(c) != 1 {
			t.Fatalf("claim: %v, %v", c, err)
		}
		r.clock.Advance(time.Minute)
		if err := r.d.Maintain(r.ctx); err != nil {
			t.Fatal(err)
		}
		if got := testutil.ToFloat64(r.metrics.Redeliveries.WithLabelValues("unwritten_result")); got != 1 {
			t.Errorf("redeliveries{unwritten_result} %v, want 1", got)
		}
		if r.step() != 1 || len(r.sink.got()) != 1 {
			t.Fatal("the recovered job was not delivered")
		}
		if !strings.Contains(fmt.Sprint(r.sink.got()[0].header), "evt-1") {
			t.Errorf("delivered %v", r.sink.got()[0].header)
		}
	})
}

// With little room (an in-flight bound of 4), births, pending jobs, claims
// and jobs given back interleave for one ordered subscription: its events,
// published in small batches while earlier ones are held, still reach the
// receiver first in order, each at least once.
func TestBirths_LittleRoomKeepsAnOrderedSubscriptionsFirstReceiptsInOrder(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) { c.MaxInFlight, c.RunLength = 4, 3 }})
		r.sink.script(func(int, *http.Request) (int, http.Header, string) {
			time.Sleep(2 * time.Millisecond)
			return 200, nil, "ok"
		})
		runUntilDone(t, r)
		const n = 120
		for i := 0; i < n; i += 3 {
			var evs []hub.Event
			for k := i; k < min(i+3, n); k++ {
				evs = append(evs, event("acme", fmt.Sprintf("evt-%03d", k)))
			}
			r.publish(evs...)
		}
		first := make(map[string]bool)
		var order []string
		for deadline := time.Now().Add(testkit.Patience); len(first) < n; time.Sleep(10 * time.Millisecond) {
			order, first = order[:0], map[string]bool{}
			for _, q := range r.sink.got() {
				id := q.header.Get("X-Lerian-Event-Id")
				if !first[id] {
					first[id] = true
					order = append(order, id)
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d events received", len(first), n)
			}
		}
		for i, id := range order {
			if want := fmt.Sprintf("evt-%03d", i); id != want {
				t.Fatalf("first receipt %d is %s, want %s: an ordered subscription's events were overtaken (%v)", i, id, want, order)
			}
		}
	})
}

// A backlog of one ordered subscription bigger than the room a birth is
// offered: the jobs that did not fit stay pending, and each run's results
// hand the next run over as they are written. Nothing here waits for the
// claim loop's idle poll or the statistics' tick (neither fires within the
// test): the bench saw one ordered tenant's backlog go at one run of 64 a
// second, each run's results waiting for the statistics' tick to wake the
// writer.
func TestBirths_ABacklogBiggerThanTheRoomOfferedIsHandedOverRunByRun(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
			c.Dispatch.MaxInFlight = 6 // the room of a birth offer
			c.Dispatch.RunLength = 4
			c.Dispatch.IdleInterval = time.Hour       // no safety poll
			c.Dispatch.StatsFlushInterval = time.Hour // no statistics' tick
		}})
		idle := noIdlePoll(r)
		runUntilDone(t, r)
		waitIdle(t, idle)
		ids := r.publishBatch("evt", 40) // one transaction: 6 born, 34 pending
		waitRequests(t, r.sink, len(ids), "a backlog waited for the idle poll after its birth")
		for i, q := range r.sink.got()[:len(ids)] {
			if got := q.header.Get("X-Lerian-Event-Id"); got != ids[i] {
				t.Fatalf("request %d was %s, want %s: out of order", i, got, ids[i])
			}
		}
	})
}
