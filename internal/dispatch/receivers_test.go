package dispatch_test

import (
	"context"
	"fmt"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// run starts r's dispatcher and stops it when the test ends (after the
// test's own cleanups, such as releasing a hung sink).
func (r *rig) run() {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.d.Run(ctx) }()
	r.live.Store(true)
	r.t.Cleanup(func() {
		r.live.Store(false)
		cancel()
		if err := <-done; err != nil {
			r.t.Error(err)
		}
	})
}

// gate is a receiver that holds every request until opened, counting how
// many it holds at once.
type gate struct {
	mu      sync.Mutex
	open    chan struct{}
	once    sync.Once
	holding int
	most    int
	total   int
}

func newGate(t testing.TB, s *sink) *gate {
	g := &gate{open: make(chan struct{})}
	s.script(func(int, *http.Request) (int, http.Header, string) {
		g.mu.Lock()
		g.holding++
		g.total++
		g.most = max(g.most, g.holding)
		g.mu.Unlock()
		<-g.open
		g.mu.Lock()
		g.holding--
		g.mu.Unlock()
		return 200, nil, "ok"
	})
	t.Cleanup(g.release) // before the sink closes
	return g
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

func (g *gate) counts() (holding, most, total int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.holding, g.most, g.total
}

func (r *rig) jobsOf(tenant, sub string) []hub.Job {
	r.t.Helper()
	var all []hub.Job
	before := ""
	for {
		jobs, err := r.store.ListJobs(r.ctx, store.ListJobsParams{TenantID: tenant, SubscriptionID: sub, Before: before, Limit: 500})
		if err != nil {
			r.t.Fatal(err)
		}
		all = append(all, jobs...)
		if len(jobs) < 500 {
			return all
		}
		before = jobs[len(jobs)-1].ID
	}
}

func (r *rig) allSucceeded(tenant, sub string, n int) bool {
	jobs := r.jobsOf(tenant, sub)
	ok := 0
	for _, j := range jobs {
		if j.Status == hub.JobSucceeded {
			ok++
		}
	}
	return len(jobs) == n && ok == n
}

// An attempt slower than three leases stays this process's: its
// heartbeat is renewed while it lives, so the job is attempted once, never
// taken over beside itself, and never counted toward poison
// (docs/delivery.md, "Crashes").
func TestHeartbeat_AnAttemptLastingThreeLeasesIsAttemptedOnceAndNeverPoisoned(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		const lease = time.Second
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
			c.Lease = lease // shorter than the delivery timeout: fine now
			c.Destinations = destinations(t, time.Minute, nil)
		}})
		g := newGate(t, r.sink)
		r.publish(event("acme", "evt-1"))
		r.run()
		testkit.WaitFor(t, "the attempt is under way", func() bool { h, _, _ := g.counts(); return h == 1 })
		// Four leases pass, on the real clock and the database's; the
		// process renews its heartbeat as it goes (every fifth of a lease)
		// and maintenance runs after every step.
		for range 8 {
			renewals := testutil.ToFloat64(r.metrics.Heartbeats.WithLabelValues("ok"))
			r.clock.Advance(lease / 2)
			testkit.WaitFor(t, "a renewal", func() bool {
				return testutil.ToFloat64(r.metrics.Heartbeats.WithLabelValues("ok")) > renewals
			})
			if err := r.d.Maintain(r.ctx); err != nil {
				t.Fatal(err)
			}
		}
		g.release()
		testkit.WaitFor(t, "the slow attempt's result", func() bool { return r.allSucceeded("acme", r.sub.ID, 1) })
		j, attempts := r.onlyJob()
		if _, _, total := g.counts(); total != 1 || j.Attempts != 1 || j.Recoveries != 0 || len(attempts) != 1 {
			t.Fatalf("%d requests; job %+v with %d attempts logged: want one attempt, no recovery", total, j, len(attempts))
		}
	})
}

// One destination holds at most its share of the attempts in flight: a
// hung destination's further jobs wait without an attempt, and another
// destination's deliveries go on beside it.
func TestInFlight_AHungDestinationHoldsOnlyItsShare(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{maxInFlight: 10, cfg: func(c *dispatch.Config) {
			c.MaxPerDestination, c.MaxInFlight, c.Workers = 3, 100, 2
			c.IdleInterval = 20 * time.Millisecond
			c.Destinations = destinations(t, time.Minute, nil)
		}})
		g := newGate(t, r.sink)
		healthy := newSink(t)
		if _, err := r.store.CreateTenant(r.ctx, store.CreateTenantParams{ID: "globex", Name: "Globex"}); err != nil {
			t.Fatal(err)
		}
		other := r.subscribe("globex", "sub_healthy", healthy.URL, rigOptions{})
		for i := range 10 {
			r.publish(event("acme", fmt.Sprintf("hung-%d", i)))
		}
		for i := range 30 {
			r.publish(event("globex", fmt.Sprintf("ok-%d", i)))
		}
		r.run()
		testkit.WaitFor(t, "every delivery to the healthy destination", func() bool {
			return r.allSucceeded("globex", other.ID, 30)
		})
		if holding, most, _ := g.counts(); holding != 3 || most != 3 {
			t.Fatalf("the hung destination holds %d attempts (at most %d), want its share of 3", holding, most)
		}
		for _, j := range r.jobsOf("acme", r.sub.ID) {
			if j.Status == hub.JobPending && (j.Attempts != 0 || j.Recoveries != 0) {
				t.Fatalf("a job waiting for its destination's share used an attempt: %+v", j)
			}
		}
		// Once it answers, the rest is attempted, once each.
		g.release()
		testkit.WaitFor(t, "the hung destination's jobs", func() bool { return r.allSucceeded("acme", r.sub.ID, 10) })
		for _, j := range r.jobsOf("acme", r.sub.ID) {
			if j.Attempts != 1 {
				t.Fatalf("job %+v", j)
			}
		}
	})
}

// The in-flight set is bounded: with MaxInFlight attempts waiting for
// their answers, nothing more is sent until one answers.
func TestInFlight_TheSetIsBounded(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{maxInFlight: 20, cfg: func(c *dispatch.Config) {
			c.MaxPerDestination, c.MaxInFlight, c.Workers = 64, 4, 8
			c.IdleInterval = 20 * time.Millisecond
			c.Destinations = destinations(t, time.Minute, nil)
		}})
		g := newGate(t, r.sink)
		for i := range 20 {
			r.publish(event("acme", fmt.Sprintf("evt-%d", i)))
		}
		r.run()
		testkit.WaitFor(t, "the in-flight set filled", func() bool { h, _, _ := g.counts(); return h == 4 })
		time.Sleep(200 * time.Millisecond) // ten idle polls: nothing more goes out
		if _, most, total := g.counts(); most != 4 || total != 4 {
			t.Fatalf("%d requests, %d at once; want the bound of 4", total, most)
		}
		counts, _ := r.store.CountJobs(r.ctx)
		if counts[hub.JobInFlight] > 4 {
			t.Fatalf("%d jobs leased with 4 attempts in flight: claims must stay within the set", counts[hub.JobInFlight])
		}
		g.release()
		testkit.WaitFor(t, "every delivery", func() bool { return r.allSucceeded("acme", r.sub.ID, 20) })
	})
}

// claimLog records the claims a dispatcher makes: full claims, targeted
// ones, and the hand-offs of completions, in the order they start.
type claimLog struct {
	dispatch.Store
	mu     sync.Mutex
	marked int      // index of the first claim started after mark
	kinds  []string // "full", "targeted", "handoff"
	gotB   int      // index of the claim that returned tenant B's job; -1 before
}

func (l *claimLog) note(kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kinds = append(l.kinds, kind)
	return len(l.kinds) - 1
}

func (l *claimLog) found(i int, cs []store.Claimed) {
	for _, c := range cs {
		if c.Job.TenantID == "globex" {
			l.mu.Lock()
			if l.gotB < 0 {
				l.gotB = i
			}
			l.mu.Unlock()
		}
	}
}

func (l *claimLog) ClaimJobs(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	kind := "full"
	if p.Subscriptions != nil {
		kind = "targeted"
		if slices.Contains(p.Subscriptions, "sub_b") {
			kind = "targeted+b" // the announcement of B's new job
		}
	}
	i := l.note(kind)
	cs, err := l.Store.ClaimJobs(ctx, p)
	l.found(i, cs)
	return cs, err
}

func (l *claimLog) Write(ctx context.Context, p store.WriteParams) (store.WriteResult, error) {
	if p.Complete.Next == nil {
		return l.Store.Write(ctx, p)
	}
	i := l.note("handoff")
	res, err := l.Store.Write(ctx, p)
	l.found(i, res.Complete.Claimed)
	return res, err
}

func (l *claimLog) mark() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.marked = len(l.kinds)
}

// While tenant A drains a backlog at max_in_flight 64 through hand-offs,
// tenant B's single new job is claimed by the first claim across all
// subscriptions after the wake-up: no hand-off that starts after it goes
// first, so B waits one claim round, not for A's backlog.
func TestFairness_ANewTenantsJobIsClaimedInTheNextRoundDespiteHandOffs(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		log := &claimLog{gotB: -1}
		r := newRig(t, d, rigOptions{maxInFlight: 64, cfg: func(c *dispatch.Config) {
			log.Store = c.Store
			c.Store = log
			c.IdleInterval = time.Hour // no idle poll: only the wake-up finds B
		}})
		r.sink.script(func(int, *http.Request) (int, http.Header, string) {
			time.Sleep(2 * time.Millisecond)
			return 200, nil, ""
		})
		const backlog = 3000
		var evs []hub.Event
		for i := range backlog {
			evs = append(evs, event("acme", fmt.Sprintf("a-%05d", i)))
		}
		for start := 0; start < backlog; start += 500 {
			r.publish(evs[start : start+500]...)
		}
		if _, err := r.store.CreateTenant(r.ctx, store.CreateTenantParams{ID: "globex", Name: "Globex"}); err != nil {
			t.Fatal(err)
		}
		b := r.subscribe("globex", "sub_b", r.sink.URL, rigOptions{})
		r.run()
		testkit.WaitFor(t, "A drained through hand-offs", func() bool {
			log.mu.Lock()
			defer log.mu.Unlock()
			n := 0
			for _, k := range log.kinds {
				if k == "handoff" {
					n++
				}
			}
			return n >= 20
		})
		r.publish(event("globex", "b-1"))
		log.mark()
		r.d.Wake()
		testkit.WaitFor(t, "B's job delivered", func() bool { return r.allSucceeded("globex", b.ID, 1) })

		log.mu.Lock()
		kinds, marked, gotB := log.kinds, log.marked, log.gotB
		log.mu.Unlock()
		// B's new job may be born leased to the dispatcher in its ingest
		// transaction (docs/architecture.md, "The writer"): then
		// no claim takes it and A's hand-offs cannot delay it. Otherwise it
		// is announced as its ingest commits: a claim naming B's
		// subscription may take it before the wake-up even comes.
		if gotB < 0 {
			if testutil.ToFloat64(r.metrics.JobsBorn) < 1 {
				t.Fatal("B's job was delivered, neither claimed nor born leased")
			}
		} else if gotB < marked {
			if kinds[gotB] != "targeted+b" {
				t.Fatalf("B's job was claimed before the wake-up by a %s claim, not the one its announcement asked for", kinds[gotB])
			}
		} else {
			first := -1 // the first claim after the wake-up that looks for B
			for i := marked; i < len(kinds); i++ {
				if kinds[i] == "full" || kinds[i] == "targeted+b" {
					first = i
					break
				}
			}
			if first < 0 || gotB != first {
				t.Fatalf("B's job was claimed by claim %d (%v), want the first claim after the wake-up that looks for it (%d)", gotB, kinds[marked:min(gotB+1, len(kinds))], first)
			}
			// Only hand-offs already deciding when the wake-up came (one
			// per completer) may start before it.
			if handoffs := first - marked; handoffs > 2 {
				t.Fatalf("%d claims started between the wake-up and the claim that found B: %v", handoffs, kinds[marked:first+1])
			}
		}
		pending := 0
		for _, j := range r.jobsOf("acme", r.sub.ID) {
			if j.Status != hub.JobSucceeded {
				pending++
			}
		}
		if pending == 0 {
			t.Fatal("A's backlog was drained before B was delivered: the test proves nothing")
		}
	})
}

// breakerRig: one ordered subscription whose destination fails five times
// (its breaker opens), then is healthy again, behind a backlog.
func breakerRig(t *testing.T, d testkit.Driver) (*rig, *dispatch.Breakers, *ordered) {
	var breakers *dispatch.Breakers
	r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
		var err error
		if breakers, err = dispatch.NewBreakers(config.Defaults(config.Serve).Breaker, c.Now, c.Metrics); err != nil {
			t.Fatal(err)
		}
		c.Breakers = breakers
		c.IdleInterval = 20 * time.Millisecond
	}})
	o := &ordered{}
	r.sink.script(func(n int, req *http.Request) (int, http.Header, string) {
		if n <= 5 {
			return 500, nil, ""
		}
		seq, _ := strconv.Atoi(req.Header.Get("X-Lerian-Sequence"))
		o.mu.Lock()
		o.seqs = append(o.seqs, seq)
		o.mu.Unlock()
		return 200, nil, ""
	})
	var evs []hub.Event
	for i := range 200 {
		evs = append(evs, event("acme", fmt.Sprintf("evt-%03d", i)))
	}
	r.publish(evs...)
	r.run()
	// The jobs shed wait for the probe time, and so does the rest of the
	// backlog: the shed holds the ordered subscription (docs/delivery.md#ordering).
	testkit.WaitFor(t, "the breaker open, some jobs shed and the whole backlog waiting", func() bool {
		waiting, shed := 0, 0
		for _, j := range r.jobsOf("acme", r.sub.ID) {
			if j.Status == hub.JobPending {
				waiting++
				if j.Attempts == 0 && j.NextAttemptAt.After(r.clock.Now()) {
					shed++
				}
			}
		}
		return len(r.sink.got()) == 5 && waiting == 200 && shed > 0
	})
	if s := breakers.State("acme", r.sink.URL); s != dispatch.BreakerOpen {
		t.Fatalf("breaker %s", s)
	}
	return r, breakers, o
}

type ordered struct {
	mu   sync.Mutex
	seqs []int
}

// inOrder checks that every one of n sequences was delivered once, in
// arrival order.
func (o *ordered) inOrder(t *testing.T, n int) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seqs) != n {
		t.Fatalf("%d successful deliveries, want %d", len(o.seqs), n)
	}
	for i, s := range o.seqs {
		if s != i+1 {
			t.Fatalf("delivery %d carried sequence %d: the backlog did not drain in arrival order (%v...)", i+1, s, o.seqs[:min(len(o.seqs), i+5)])
		}
	}
}

// Shedding keeps order: every job shed while the breaker was open keeps
// its place, so when the probe closes the breaker the 200-job backlog
// drains in arrival order, and a shed never used an attempt.
func TestBreaker_ABacklogDrainsInArrivalOrderWhenTheBreakerCloses(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r, breakers, o := breakerRig(t, d)
		r.clock.Advance(31 * time.Second) // the probe is due
		r.d.Wake()
		testkit.WaitFor(t, "the backlog delivered", func() bool { return r.allSucceeded("acme", r.sub.ID, 200) })
		o.inOrder(t, 200)
		if s := breakers.State("acme", r.sink.URL); s != dispatch.BreakerClosed {
			t.Fatalf("breaker %s", s)
		}
		for _, j := range r.jobsOf("acme", r.sub.ID) {
			if want := 1 + btoi(j.EventSequence <= 5); j.Attempts != want {
				t.Fatalf("job %d used %d attempts, want %d", j.EventSequence, j.Attempts, want)
			}
		}
	})
}

// A passing verification closes the breaker at once and makes the waiting
// jobs due now: the backlog drains without waiting for the breaker's own
// probe time (the clock does not move), in arrival order.
func TestBreaker_APassingVerifyClosesItAndTheWaitingJobsGoAtOnce(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r, breakers, o := breakerRig(t, d)
		if err := r.d.Verified(r.ctx, r.sub); err != nil {
			t.Fatal(err)
		}
		if s := breakers.State("acme", r.sink.URL); s != dispatch.BreakerClosed {
			t.Fatalf("breaker %s after a passing verify", s)
		}
		testkit.WaitFor(t, "the backlog delivered", func() bool { return r.allSucceeded("acme", r.sub.ID, 200) })
		o.inOrder(t, 200)
	})
}

// A timeout is a failure: a destination that never answers in time opens
// its breaker like one that answers 500.
func TestBreaker_TimeoutsCountAsFailures(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		var breakers *dispatch.Breakers
		r := newRig(t, d, rigOptions{maxInFlight: 10, cfg: func(c *dispatch.Config) {
			var err error
			if breakers, err = dispatch.NewBreakers(config.Defaults(config.Serve).Breaker, c.Now, c.Metrics); err != nil {
				t.Fatal(err)
			}
			c.Breakers, c.Workers = breakers, 1
			c.Destinations = destinations(t, 50*time.Millisecond, nil)
		}})
		newGate(t, r.sink)
		for i := range 8 {
			r.publish(event("acme", fmt.Sprintf("evt-%d", i)))
		}
		r.step()
		if s := breakers.State("acme", r.sink.URL); s != dispatch.BreakerOpen {
			t.Fatalf("breaker %s after 5 timeouts", s)
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A verify answered by another process (its API wrote the subscription
// and made the waiting jobs due, closing only its own breaker) closes this
// process's breaker too: the woken jobs come with the subscription as it
// now stands, changed after the breaker opened, and the backlog drains in
// order without waiting for this breaker's probe (the clock stays within
// the open period).
func TestBreaker_AVerifyOnAnotherProcessClosesThisOne(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r, breakers, o := breakerRig(t, d)
		r.clock.Advance(time.Second)
		sub, err := r.store.GetSubscription(r.ctx, "acme", r.sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.store.UpdateSubscription(r.ctx, sub); err != nil { // what the other process's verify writes
			t.Fatal(err)
		}
		if _, err := r.store.WakeJobs(r.ctx, []string{r.sub.ID}); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "the backlog delivered", func() bool { return r.allSucceeded("acme", r.sub.ID, 200) })
		o.inOrder(t, 200)
		if s := breakers.State("acme", r.sink.URL); s != dispatch.BreakerClosed {
			t.Fatalf("breaker %s after the backlog drained", s)
		}
	})
}

// A shared receiver host is shared fairly (docs/performance.md): one tenant's
// hung attempts, which took the host's whole share while it was alone there,
// never hold back another tenant sending to the same host, and the hung
// tenant gets no attempt beyond what it holds.
func TestInFlight_AHungTenantNeverHoldsAnotherTenantsRoomOnASharedHost(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{maxInFlight: 10, cfg: func(c *dispatch.Config) {
			c.MaxPerDestination, c.MaxInFlight, c.Workers = 4, 100, 2
			c.IdleInterval = 20 * time.Millisecond
			// The hung attempts outlast the test's patience: at load 6 the
			// other tenant's 30 deliveries once took over a minute, the
			// hung attempts timed out, and a retry reached the receiver
			// as a fifth request (right, but not what this test is about).
			c.Destinations = destinations(t, 10*time.Minute, nil)
			// A heartbeat that cannot be renewed for 3 s on a loaded machine
			// fences the process, which cancels its hung attempts and sends
			// them again: right, but not what this test is about.
			c.Lease = 5 * time.Minute
		}})
		// One host: acme's subscription posts to its root path (held),
		// globex's to /ok (answered at once).
		open := make(chan struct{})
		var mu sync.Mutex
		holding, most := 0, 0
		r.sink.script(func(_ int, req *http.Request) (int, http.Header, string) {
			if req.URL.Path == "/ok" {
				return 200, nil, "ok"
			}
			mu.Lock()
			holding++
			most = max(most, holding)
			mu.Unlock()
			<-open
			return 200, nil, "ok"
		})
		var once sync.Once
		release := func() { once.Do(func() { close(open) }) }
		t.Cleanup(release)
		held := func() (int, int) { mu.Lock(); defer mu.Unlock(); return holding, most }

		for i := range 10 {
			r.publish(event("acme", fmt.Sprintf("hung-%d", i)))
		}
		r.run()
		testkit.WaitFor(t, "the hung tenant alone holds the host's share", func() bool { h, _ := held(); return h == 4 })

		if _, err := r.store.CreateTenant(r.ctx, store.CreateTenantParams{ID: "globex", Name: "Globex"}); err != nil {
			t.Fatal(err)
		}
		other := r.subscribe("globex", "sub_shared", r.sink.URL+"/ok", rigOptions{maxInFlight: 10})
		for i := range 30 {
			r.publish(event("globex", fmt.Sprintf("ok-%d", i)))
		}
		r.d.Wake()
		testkit.WaitFor(t, "every delivery of the other tenant on the shared host", func() bool {
			return r.allSucceeded("globex", other.ID, 30)
		})
		if h, m := held(); h != 4 || m != 4 {
			var jobs []string
			for _, j := range r.jobsOf("acme", r.sub.ID) {
				jobs = append(jobs, fmt.Sprintf("%s %s attempts %d recoveries %d %q", j.EventID, j.Status, j.Attempts, j.Recoveries, j.LastError))
			}
			t.Fatalf("the hung tenant holds %d attempts (at most %d), want the 4 it took while alone; its jobs:\n%s",
				h, m, strings.Join(jobs, "\n"))
		}
		for _, j := range r.jobsOf("acme", r.sub.ID) {
			if j.Status == hub.JobPending && (j.Attempts != 0 || j.Recoveries != 0) {
				t.Fatalf("a job waiting for its tenant's room used an attempt: %+v", j)
			}
		}
		release()
		testkit.WaitFor(t, "the hung tenant's jobs", func() bool { return r.allSucceeded("acme", r.sub.ID, 10) })
	})
}
