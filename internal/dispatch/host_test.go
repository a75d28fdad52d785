package dispatch_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// shedCounter counts the results written without an attempt: jobs put
// back to wait in the database.
type shedCounter struct {
	dispatch.Store
	shed atomic.Int64
}

func (s *shedCounter) Write(ctx context.Context, p store.WriteParams) (store.WriteResult, error) {
	for _, c := range p.Complete.Completions {
		if c.Shed && c.Attempt == nil {
			s.shed.Add(1)
		}
	}
	return s.Store.Write(ctx, p)
}

func (s *shedCounter) CompleteJobs(ctx context.Context, p store.CompleteParams) (store.CompleteResult, error) {
	for _, c := range p.Completions {
		if c.Shed && c.Attempt == nil {
			s.shed.Add(1)
		}
	}
	return s.Store.CompleteJobs(ctx, p)
}

// Ten tenants at max_in_flight 64 behind one receiver host whose share is
// 4: what a tenant cannot send yet waits here, parked at the host, not in
// the database (no job goes back to wait without an attempt), the host
// never has more than its hard ceiling in flight, and every event arrives
// once (docs/delivery.md, "One receiver host").
func TestHost_WorkBeyondAHostsShareWaitsHereNotInTheDatabase(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		const share, tenants, each = 4, 10, 30
		counted := &shedCounter{}
		r := newRig(t, d, rigOptions{maxInFlight: 64, cfg: func(c *dispatch.Config) {
			counted.Store = c.Store
			c.Store, c.MaxPerDestination = counted, share
		}})
		var inFlight, most atomic.Int32
		r.sink.script(func(int, *http.Request) (int, http.Header, string) {
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(5 * time.Millisecond)
			inFlight.Add(-1)
			return 200, nil, "ok"
		})
		var evs []hub.Event
		for i := range tenants {
			id := fmt.Sprintf("t%02d", i)
			if i > 0 { // acme is the rig's own
				if _, err := r.store.CreateTenant(r.ctx, store.CreateTenantParams{ID: id, Name: id}); err != nil {
					t.Fatal(err)
				}
				r.subscribe(id, "sub_"+id, r.sink.URL, rigOptions{maxInFlight: 64})
			} else {
				id = "acme"
			}
			for k := range each {
				evs = append(evs, event(id, fmt.Sprintf("%s-%02d", id, k)))
			}
		}
		r.publish(evs...)
		r.run()
		waitRequests(t, r.sink, tenants*each, "every event delivered")
		var ids []string
		for _, q := range r.sink.got() {
			ids = append(ids, q.header.Get("X-Lerian-Event-Id"))
		}
		slices.Sort(ids)
		if len(slices.Compact(ids)) != tenants*each {
			t.Fatalf("%d distinct events in %d requests; want each once", len(ids), len(r.sink.got()))
		}
		if n := counted.shed.Load(); n != 0 {
			t.Errorf("%d jobs went back to the database to wait without an attempt; want none: they wait here", n)
		}
		if m := most.Load(); m > 2*share {
			t.Errorf("%d attempts in flight at the host at once; its hard ceiling is %d", m, 2*share)
		}
	})
}

// muteListener drops the announcements of one subscription's new jobs,
// as a lost notification does.
type muteListener struct {
	dispatch.Store
	mute string
}

func (m *muteListener) ListenJobs(ctx context.Context, p store.ListenParams) error {
	on := p.OnJobs
	p.OnJobs = func(subs []string) {
		if subs == nil {
			on(nil)
			return
		}
		kept := slices.DeleteFunc(slices.Clone(subs), func(s string) bool { return s == m.mute })
		if len(kept) > 0 {
			on(kept)
		}
	}
	return m.Store.ListenJobs(ctx, p)
}

// A subscription whose new jobs were never announced (a lost
// notification) is found by the safety poll within its interval even
// while busy neighbours keep the claim loop going from one targeted claim
// to the next: it was seen idle for ~30 s beside busy neighbours.
func TestClaim_AnUnannouncedSubscriptionIsFoundWhileNeighboursAreBusy(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		muted := &muteListener{mute: "sub_quiet"}
		r := newRig(t, d, rigOptions{maxInFlight: 64, cfg: func(c *dispatch.Config) {
			muted.Store = c.Store
			c.Store, c.IdleInterval = muted, 200*time.Millisecond
		}})
		if _, err := r.store.CreateTenant(r.ctx, store.CreateTenantParams{ID: "quiet", Name: "Quiet"}); err != nil {
			t.Fatal(err)
		}
		r.subscribe("quiet", "sub_quiet", r.sink.URL, rigOptions{maxInFlight: 64})
		r.run()
		// The busy neighbour: events announced one after the other (each a
		// targeted claim), a bounded number of them.
		var busyDone atomic.Bool
		go func() {
			defer busyDone.Store(true)
			for i := range 3000 {
				if _, err := r.store.Ingest(r.ctx, store.IngestParams{Events: []hub.Event{event("acme", fmt.Sprintf("busy-%05d", i))}}); err != nil {
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
		testkit.WaitFor(t, "the busy neighbour delivering", func() bool { return len(r.sink.got()) > 20 })
		if _, err := r.store.Ingest(r.ctx, store.IngestParams{Events: []hub.Event{event("quiet", "q-1"), event("quiet", "q-2")}}); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "the unannounced jobs delivered, or the neighbour done", func() bool {
			return r.allSucceeded("quiet", "sub_quiet", 2) || busyDone.Load()
		})
		if busyDone.Load() {
			t.Fatal("the unannounced jobs waited until the busy neighbour stopped")
		}
		testkit.WaitFor(t, "the neighbour done", busyDone.Load)
	})
}

// Concurrency follows the receiver (docs/delivery.md, "Concurrency that
// follows the receiver"): a receiver that answers in 100 ms is given more
// attempts at once as the backlog keeps its limit full, never more than
// the ceiling, and its health shows the limit and its latency; one that
// answers 503 is given fewer.
func TestHost_TheLimitFollowsTheReceiver(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		const ceiling = 16
		r := newRig(t, d, rigOptions{maxInFlight: 64, cfg: func(c *dispatch.Config) { c.MaxPerDestination = ceiling }})
		var inFlight, most atomic.Int32
		var overloaded atomic.Bool
		r.sink.script(func(int, *http.Request) (int, http.Header, string) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			if overloaded.Load() {
				return 503, nil, "busy"
			}
			time.Sleep(100 * time.Millisecond)
			return 200, nil, "ok"
		})
		var evs []hub.Event
		for i := range 400 {
			evs = append(evs, event("acme", fmt.Sprintf("e-%03d", i)))
		}
		r.publish(evs...)
		r.run()
		testkit.WaitFor(t, "the limit grown to its ceiling", func() bool {
			l, ok := r.d.HostLimit(r.sub.Destination.Address())
			return ok && l.Limit == ceiling
		})
		l, _ := r.d.HostLimit(r.sub.Destination.Address())
		if l.Ceiling != ceiling || l.RecentLatency < 50*time.Millisecond {
			t.Errorf("limit %+v: want the ceiling %d and the receiver's ~100 ms latency", l, ceiling)
		}
		grown := l.Limit
		overloaded.Store(true)
		testkit.WaitFor(t, "the limit cut by the receiver's 503s", func() bool {
			l, _ := r.d.HostLimit(r.sub.Destination.Address())
			return l.Limit < grown
		})
		if m := most.Load(); m > 2*ceiling {
			t.Errorf("%d attempts at once at the receiver; the ceiling is %d (twice it for tenants under their fair share)", m, ceiling)
		}
	})
}
