package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/transform"
)

// Store is the part of the store the dispatcher uses.
type Store interface {
	ClaimJobs(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error)
	CompleteJobs(ctx context.Context, p store.CompleteParams) (store.CompleteResult, error)
	ResultsRecorded(ctx context.Context, cs []store.Completion) ([]string, error)
	ReleaseJobs(ctx context.Context, leases []store.JobLease) error
	RenewLeases(ctx context.Context, p store.RenewParams) ([]string, error)
	WakeJobs(ctx context.Context, subscriptionIDs []string) (int, error)
	RecoverLeases(ctx context.Context, p store.RecoverParams) (store.RecoverResult, error)
	DeadLetterOrphans(ctx context.Context) (int, error)
	AutoDisable(ctx context.Context, g store.AutoDisable) ([]store.Disabled, error)
	AdvanceBackfills(ctx context.Context, p store.AdvanceBackfillsParams) (store.AdvanceBackfillsResult, error)
	ListenJobs(ctx context.Context, p store.ListenParams) error
}

// Config configures a Dispatcher; config.Defaults fills the settings.
type Config struct {
	config.Dispatch

	Store   Store
	Keyring *envelope.Keyring // opens subscription secrets, in memory only
	// Destinations is the one send path: the drivers by destination type
	// (a type without one fails its attempts) and the delivery timeout.
	Destinations *destination.Registry
	Metrics      *metrics.Metrics
	Logger       *slog.Logger     // nil discards
	Now          func() time.Time // the clock; nil means time.Now
	Rand         *mrand.Rand      // jitter source; nil means randomly seeded

	// AutoDisable gates; nil turns auto-disable off (the kill switch).
	AutoDisable *store.AutoDisable
	// Breakers are the process's circuit breakers; nil means none.
	Breakers *Breakers
	// Tracer records a span per attempt; nil records none (each attempt
	// still sends its traceparent).
	Tracer trace.Tracer
}

func (c Config) check() error {
	ch := config.Check{Of: "dispatch.Config"}
	ch.Require("Store", c.Store != nil)
	ch.Require("Keyring", c.Keyring != nil)
	ch.Require("Destinations", c.Destinations != nil)
	ch.Require("Metrics", c.Metrics != nil)
	config.Positive(&ch, "Workers", c.Workers)
	config.Positive(&ch, "ClaimBatch", c.ClaimBatch)
	config.Positive(&ch, "IdleInterval", c.IdleInterval)
	config.Positive(&ch, "Lease", c.Lease)
	config.Positive(&ch, "PoisonThreshold", c.PoisonThreshold)
	config.Positive(&ch, "MaintenanceInterval", c.MaintenanceInterval)
	config.Positive(&ch, "FlushSize", c.FlushSize)
	config.Positive(&ch, "FlushInterval", c.FlushInterval)
	config.Positive(&ch, "MaxInFlight", c.MaxInFlight)
	config.Positive(&ch, "MaxPerDestination", c.MaxPerDestination)
	config.Positive(&ch, "RunLength", c.RunLength)
	config.Positive(&ch, "BackfillChunk", c.BackfillChunk)
	config.Positive(&ch, "BackfillPassChunks", c.BackfillPassChunks)
	return ch.Err()
}

// Dispatcher claims, attempts and completes delivery jobs.
type Dispatcher struct {
	cfg  Config
	wake chan struct{} // new jobs may exist anywhere: claim across all subscriptions
	// fullWanted is set when a claim across all subscriptions is due (new
	// jobs, the idle poll): until it has run, completions hand off
	// nothing, so hand-offs to busy subscriptions never starve the claim
	// that finds another tenant's new job.
	fullWanted atomic.Bool

	// local counts the jobs claimed here and not yet answered or given
	// back; claims keep it within MaxInFlight, which bounds memory.
	local     atomic.Int64
	roomFreed chan struct{}

	// slots is the in-flight set: one token per attempt (or run) awaiting
	// its answer.
	slots chan struct{}
	dests destinations
	// throttles are the rate-limited subscriptions' token buckets.
	throttles throttles
	// transforms are the subscriptions' compiled jq programs (SPEC 29).
	transforms transform.Cache

	// leases are the leases held here, renewed every sixth of a lease
	// until the job's result is written or given back.
	leases leaseRegistry
	// runs are the ordered subscriptions' runs held here; q is Run's local
	// queue (nil when not running), where born jobs are queued too.
	runs runs
	q    atomic.Pointer[queue]
	// owner names this dispatcher in the store (ClaimParams.Owner,
	// BirthOffer.Owner).
	owner string

	// freedSubs are subscriptions whose jobs just finished here: they have
	// free slots, so the next claim can target them cheaply.
	hintMu    sync.Mutex
	freedSubs map[string]struct{}
	hinted    chan struct{}
	// drained are ordered subscriptions whose last claim here took every
	// job they had due: when their jobs finish, no claim is made for them
	// (it would find nothing) until new jobs are announced. hintSeq counts
	// announcements and hints: a claim that overlapped one marks nothing.
	drained map[string]struct{}
	hintSeq atomic.Uint64
	// hintedAt is the hintSeq of each subscription's last hint, wokeAt
	// that of the last Wake: a birth marks drained only subscriptions
	// not hinted since its offer.
	hintedAt map[string]uint64
	wokeAt   uint64
	// offerSeq is the hintSeq at each birth offer (by token).
	offerSeq sync.Map

	randMu sync.Mutex
	rand   *mrand.Rand

	// stopping is closed when the stop begins: Run's loops stop waiting.
	// Every claim of Run (the claim loop's and the completers' hand-offs)
	// holds claimMu for reading and starts only while stopped is false;
	// Stop sets it under the write lock, so once fenced is closed no claim
	// is in progress and none will start.
	stopOnce sync.Once
	stopping chan struct{}
	claimMu  sync.RWMutex
	stopped  bool
	fenced   chan struct{}

	// lastStoreFailure is when a store call last failed here (unix ns on
	// the dispatcher's clock; 0: never): lease recovery waits a lease
	// after it (Maintain).
	lastStoreFailure atomic.Int64

	// after is the clock's timer for retry waits, idleAfter the claim
	// loop's (time.After unless a test replaces them).
	after, idleAfter func(time.Duration) <-chan time.Time

	// unwritten are the result batches whose write is failing: a
	// readiness check (Unwritten).
	unwritten unwritten

	// due holds when the jobs this process put back to wait (retries,
	// throttled and shed jobs) become due: the claim loop wakes then
	// instead of polling.
	due dueTimes
}

// New returns a dispatcher; Run starts it.
func New(cfg Config) (*Dispatcher, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		var seed [16]byte
		rand.Read(seed[:])
		cfg.Rand = mrand.New(mrand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}
	return &Dispatcher{cfg: cfg, wake: make(chan struct{}, 1), rand: cfg.Rand,
		freedSubs: make(map[string]struct{}), hintedAt: make(map[string]uint64), hinted: make(chan struct{}, 1), drained: make(map[string]struct{}),
		roomFreed: make(chan struct{}, 1), slots: make(chan struct{}, cfg.MaxInFlight),
		dests:  newDestinations(cfg.MaxPerDestination, cfg.Now),
		leases: newLeaseRegistry(), runs: newRuns(), owner: hub.NewID("disp", cfg.Now()), stopping: make(chan struct{}), fenced: make(chan struct{}), after: time.After, idleAfter: time.After}, nil
}

// Stop stops claiming: it returns once no claim of Run is in progress, and
// none starts afterwards (or when ctx is done first). Run then gives back
// the claimed jobs no worker started, lets the attempts in flight finish,
// writes their results and returns. Shutdown calls it first, so a stopping
// process takes on no new work (SPEC 16). A dispatcher runs once: Step,
// the synchronous form, is not fenced.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.stopOnce.Do(func() {
		close(d.stopping)
		go func() {
			d.claimMu.Lock() // waits for the claims in progress
			d.stopped = true
			d.claimMu.Unlock()
			close(d.fenced)
		}()
	})
	select {
	case <-d.fenced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("dispatch: stop claiming: %w", ctx.Err())
	}
}

func (d *Dispatcher) isStopping() bool {
	select {
	case <-d.stopping:
		return true
	default:
		return false
	}
}

// mayClaim reports whether a claim may start; when it may, done must be
// called once the claim has finished (Stop waits for it).
func (d *Dispatcher) mayClaim() (done func(), ok bool) {
	d.claimMu.RLock()
	if d.stopped || d.isStopping() {
		d.claimMu.RUnlock()
		return nil, false
	}
	return d.claimMu.RUnlock, true
}

// sleep waits for wait on the dispatcher's clock; it returns false if ctx
// ends first.
func (d *Dispatcher) sleep(ctx context.Context, wait time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-d.after(wait):
		return true
	}
}

// Wake tells an idle dispatcher new jobs may exist anywhere: it claims
// across all subscriptions.
func (d *Dispatcher) Wake() {
	d.hintMu.Lock()
	d.wokeAt = d.hintSeq.Add(1)
	clear(d.drained)
	d.hintMu.Unlock()
	d.fullWanted.Store(true)
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) now() time.Time { return d.cfg.Now().UTC() }

// Step runs one round synchronously: one claim, its attempts (up to Workers
// at once), one completion transaction. It returns how many jobs it
// handled. Tests drive time with it; Run is the continuous form.
func (d *Dispatcher) Step(ctx context.Context) (int, error) {
	claimed, err := d.cfg.Store.ClaimJobs(ctx, store.ClaimParams{Batch: d.cfg.ClaimBatch, Lease: d.heldLease()})
	if err != nil || len(claimed) == 0 {
		return 0, err
	}
	results := make([]store.Completion, len(claimed))
	sem := make(chan struct{}, d.cfg.Workers)
	var wg sync.WaitGroup
	for i, c := range claimed {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i] = d.deliver(ctx, c)
		}()
	}
	wg.Wait()
	_, err = d.complete(ctx, results, nil)
	return len(claimed), err
}

// queue is the local queue of claimed work waiting for a worker: single
// jobs, and runs of an ordered subscription's jobs. Claim loops and
// completers (which claim the next jobs of the subscriptions they free)
// offer to it without blocking; once it is closed, offers are refused.
type queue struct {
	mu     sync.RWMutex
	ch     chan unit
	closed bool
}

// offer queues what fits and returns the rest.
func (q *queue) offer(units []unit) (rest []unit) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	for i, u := range units {
		if q.closed {
			return units[i:]
		}
		select {
		case q.ch <- u:
		default:
			return units[i:]
		}
	}
	return nil
}

// close stops offers and returns what no worker took.
func (q *queue) close() []unit {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	var left []unit
	for {
		select {
		case u := <-q.ch:
			left = append(left, u)
		default:
			close(q.ch)
			return left
		}
	}
}

// Run claims and delivers until Stop is called or ctx is done, then stops
// claiming, gives back the leases of claimed jobs not started, lets
// attempts in flight finish, and writes their results. A result write that
// keeps failing is retried until ctx is done (then its lease expires and
// the job is delivered again): Stop is the graceful stop, and the end of
// ctx also bounds the drain.
//
// Workers take claimed work, prepare it (load, decrypt in memory, sign)
// and send it; the wait for each answer is held in the in-flight set
// (MaxInFlight attempts, MaxPerDestination of them to one destination),
// so the workers go on while destinations think. The leases of every job
// held here are renewed while it is.
func (d *Dispatcher) Run(ctx context.Context) error {
	q := &queue{ch: make(chan unit, d.cfg.MaxInFlight+3*d.cfg.ClaimBatch)}
	d.q.Store(q)
	results := make(chan store.Completion, d.cfg.MaxInFlight)
	ran := make(chan struct{})
	defer close(ran)
	go func() {
		select {
		case <-ctx.Done():
			d.Stop(context.Background())
		case <-ran:
		}
	}()

	renewStop, renewDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(renewDone); d.renewLoop(renewStop) }()

	var workers, flying sync.WaitGroup
	var unstartedMu sync.Mutex
	var unstarted []store.Claimed // taken from the queue after the stop began
	for range d.cfg.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for u := range q.ch {
				if d.isStopping() {
					unstartedMu.Lock()
					unstarted = append(unstarted, d.runs.jobs(u)...)
					unstartedMu.Unlock()
					continue
				}
				// An attempt in flight finishes even while stopping: its
				// own timeout bounds it.
				d.start(context.WithoutCancel(ctx), u, results, &flying)
			}
		}()
	}
	// Two completers: one writes while the other gathers the next batch.
	var completers sync.WaitGroup
	for range 2 {
		completers.Add(1)
		go func() { defer completers.Done(); d.completer(ctx, results, q) }()
	}
	maintDone := make(chan struct{})
	go func() { defer close(maintDone); d.maintainLoop(ctx) }()
	listenCtx, stopListening := context.WithCancel(ctx)
	listenDone, listening := make(chan struct{}), make(chan struct{})
	go func() { defer close(listenDone); d.listen(listenCtx, listening) }()
	// The first claim (across all subscriptions) starts once new jobs are
	// told: nothing falls between the two.
	select {
	case <-listening:
	case <-listenDone:
	case <-ctx.Done():
	}

	d.claimLoop(ctx, q)
	stopListening()
	<-listenDone

	// Stopping: give back what no worker has started.
	d.Stop(context.Background()) // no hand-off claims from here on
	var left []store.Claimed
	for _, u := range q.close() {
		left = append(left, d.runs.jobs(u)...)
	}
	d.release(left)
	workers.Wait()
	d.release(unstarted)
	flying.Wait()
	close(results)
	completers.Wait()
	close(renewStop)
	<-renewDone
	<-maintDone
	return nil
}

// start admits one unit of work into the in-flight set and sends its
// first request; the wait for the answer (and, for a run, the next jobs,
// one at a time) goes on in its own goroutine. A tenant with no room at
// the destination (its fair share of the destination's share is taken)
// makes the work wait without an attempt: it goes back to pending, and
// claims here leave the tenant's subscriptions there alone until it has
// room again.
func (d *Dispatcher) start(ctx context.Context, u unit, results chan<- store.Completion, flying *sync.WaitGroup) {
	// A unit is one subscription's: one destination address for all.
	c := u.first
	address, tenant := c.Subscription.Destination.Address(), c.Job.TenantID
	dest := destinationOf(address)
	if !d.dests.admit(dest, tenant, c.Job.SubscriptionID) {
		all := d.runs.jobs(u)
		for _, c := range all {
			a := &attempt{c: c, out: store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken},
				SubscriptionID: c.Job.SubscriptionID}}
			d.shed(a, time.Time{})
			results <- a.out
		}
		d.answered(len(all))
		return
	}
	d.slots <- struct{}{} // waits while the in-flight set is full
	a := d.prepare(ctx, c, address)
	flying.Add(1)
	go func() {
		defer flying.Done()
		defer func() {
			<-d.slots
			if freed := d.dests.leave(dest, tenant); len(freed) > 0 {
				d.hintSubs(freed) // no longer excluded from claims
			}
		}()
		for {
			// The result is written behind, in a batch: the next job of a
			// run does not wait for it.
			results <- d.await(a)
			d.answered(1)
			if u.run == nil {
				return
			}
			if d.isStopping() {
				rest := d.runs.drain(u.run)
				d.release(rest)
				d.answered(len(rest))
				return
			}
			if !a.throttled.IsZero() {
				// The rest of an ordered run waits for the same token, in
				// order, even if the clock reaches it meanwhile.
				rest := d.runs.drain(u.run)
				for _, c := range rest {
					w := &attempt{c: c, out: store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken},
						SubscriptionID: c.Job.SubscriptionID}}
					d.throttle(w, a.throttled)
					results <- w.out
				}
				d.answered(len(rest))
				return
			}
			next, ok := d.runs.take(u.run)
			if !ok {
				return
			}
			a = d.prepare(ctx, next, address)
		}
	}()
}

// answered accounts for n jobs no longer waiting here for an answer.
func (d *Dispatcher) answered(n int) {
	d.local.Add(-int64(n))
	select {
	case d.roomFreed <- struct{}{}:
	default:
	}
}

// room is how many more jobs may be claimed.
func (d *Dispatcher) room() int { return d.cfg.MaxInFlight - int(d.local.Load()) }

// release gives back leases of claimed jobs no worker started.
func (d *Dispatcher) release(cs []store.Claimed) {
	if len(cs) == 0 {
		return
	}
	leases := make([]store.JobLease, len(cs))
	for i, c := range cs {
		leases[i] = store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}
	}
	d.leases.forget(leases...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.cfg.Store.ReleaseJobs(ctx, leases); err != nil {
		d.cfg.Logger.Warn("could not give back leases; they will expire and be recovered", "jobs", len(leases), "err", err)
	}
}

// listen hears of the jobs ingest creates (in this process, and on
// PostgreSQL in every process sharing the database) and wakes the claim
// loop with their subscriptions: a targeted claim, costing in proportion
// to them, not to every subscription.
func (d *Dispatcher) listen(ctx context.Context, listening chan<- struct{}) {
	var once sync.Once
	ready := func() { once.Do(func() { close(listening) }) }
	defer ready()
	err := d.cfg.Store.ListenJobs(ctx, store.ListenParams{
		Ready:  ready,
		Births: d,
		OnJobs: func(subs []string) {
			if subs == nil {
				d.Wake()
				return
			}
			d.hintSubs(subs)
		},
		OnLost: func(err error) {
			d.cfg.Logger.Warn("listening for new jobs failed; dialing again (meanwhile the idle poll finds them)", "err", err)
		},
	})
	if err != nil && ctx.Err() == nil {
		d.cfg.Logger.Error("listening for new jobs stopped; the idle poll finds them", "err", err)
	}
}

// claimLoop keeps the local queue fed. New jobs wake it with their
// subscriptions (ListenJobs), and claims then target those, as they
// target the subscriptions whose jobs just finished, which is what keeps
// a busy hub busy. Claims across all subscriptions (costing in proportion
// to them) run at the start, when the listening connection was lost, when
// a job put back to wait here becomes due, and on the slow idle poll
// (IdleInterval), the safety net for jobs made due by time elsewhere.
func (d *Dispatcher) claimLoop(ctx context.Context, q *queue) {
	d.fullWanted.Store(true)
	more := false // the last full claim filled its batch
	for !d.isStopping() {
		room := d.room()
		if room <= 0 {
			select {
			case <-d.stopping:
			case <-d.roomFreed:
			}
			continue
		}
		p := store.ClaimParams{Batch: min(d.cfg.ClaimBatch, room), Lease: d.heldLease(), Run: d.cfg.RunLength, Owner: d.owner}
		full := d.fullWanted.Swap(false) || more
		if !full {
			if p.Subscriptions = d.takeHints(); len(p.Subscriptions) == 0 {
				d.waitForWork()
				continue
			}
		}
		p.Exclude = d.dests.excluded()
		done, ok := d.mayClaim()
		if !ok {
			return
		}
		seq := d.hintSeq.Load()
		// Not canceled by the stop: a claim cut off after the database
		// committed it would strand its jobs until their leases expire.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		claimed, err := d.cfg.Store.ClaimJobs(cctx, p)
		cancel()
		done()
		if err != nil && !d.isStopping() {
			d.storeFailed()
			d.cfg.Logger.Error("claiming jobs failed; retrying", "err", err)
		}
		if err == nil {
			d.noteDrained(claimed, p, seq)
		}
		d.enqueue(q, claimed)
		// A claim that filled its batch may have left more: go on.
		more = full && err == nil && len(claimed) == p.Batch
		if !full && err == nil && len(claimed) == p.Batch {
			d.hintSubs(p.Subscriptions)
		}
		if err != nil {
			d.waitForWork()
		}
	}
}

// waitForWork waits for new jobs (a targeted claim, or a full one when
// any subscription may have them), freed subscriptions (a targeted
// claim), or the time a job put back to wait here becomes due or the idle
// poll, whichever is first (a full claim).
func (d *Dispatcher) waitForWork() {
	wait := d.cfg.IdleInterval
	if next, ok := d.due.next(); ok {
		wait = min(wait, max(next.Sub(d.now()), 0))
	}
	select {
	case <-d.stopping:
	case <-d.wake:
		d.fullWanted.Store(true)
	case <-d.idleAfter(wait):
		d.due.pass(d.now())
		d.fullWanted.Store(true)
	case <-d.hinted:
	}
}

func (d *Dispatcher) hintSubs(ids []string) {
	if len(ids) == 0 {
		return
	}
	d.hintMu.Lock()
	seq := d.hintSeq.Add(1)
	for _, id := range ids {
		d.freedSubs[id] = struct{}{}
		delete(d.drained, id)
		d.hintedAt[id] = seq
	}
	d.hintMu.Unlock()
	select {
	case d.hinted <- struct{}{}:
	default:
	}
}

// noteDrained marks the ordered subscriptions a claim took fewer jobs of
// than a run may hold: it took every job they had due (at its snapshot).
// A claim that filled its batch, or that an announcement or hint
// overlapped (seq is hintSeq before it), marks nothing.
func (d *Dispatcher) noteDrained(claimed []store.Claimed, p store.ClaimParams, seq uint64) {
	if len(claimed) == 0 || len(claimed) >= p.Batch {
		return
	}
	n := make(map[string]int)
	for _, c := range claimed {
		if c.Subscription.MaxInFlight <= 1 {
			n[c.Job.SubscriptionID]++
		}
	}
	d.hintMu.Lock()
	defer d.hintMu.Unlock()
	if d.hintSeq.Load() != seq {
		return
	}
	for id, k := range n {
		if k < p.Run {
			d.drained[id] = struct{}{}
		}
	}
}

// drainedAtBirth marks drained the ordered subscriptions born here with
// nothing pending (the store leases an ordered subscription's job at birth
// only then), unless a hint or announcement of theirs came after the offer
// (seq): their next completions then claim nothing for them.
func (d *Dispatcher) drainedAtBirth(subs []string, seq uint64) {
	d.hintMu.Lock()
	defer d.hintMu.Unlock()
	if d.wokeAt > seq {
		return
	}
	for _, id := range subs {
		if d.hintedAt[id] <= seq {
			d.drained[id] = struct{}{}
		}
	}
}

// undrained drops the drained subscriptions from ids.
func (d *Dispatcher) undrained(ids []string) []string {
	d.hintMu.Lock()
	defer d.hintMu.Unlock()
	out := ids[:0:0]
	for _, id := range ids {
		if _, ok := d.drained[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// undrain forgets that subscriptions were drained: jobs of theirs went
// back to pending here.
func (d *Dispatcher) undrain(ids []string) {
	d.hintMu.Lock()
	defer d.hintMu.Unlock()
	for _, id := range ids {
		delete(d.drained, id)
	}
}

func (d *Dispatcher) takeHints() []string {
	d.hintMu.Lock()
	defer d.hintMu.Unlock()
	out := make([]string, 0, len(d.freedSubs))
	for id := range d.freedSubs {
		out = append(out, id)
		delete(d.freedSubs, id)
	}
	return out
}

// enqueue queues claimed jobs, oldest first so a tenant's jobs start in
// arrival order, and gives back what does not fit. The jobs of an ordered
// subscription (a run) go as one unit, attempted one at a time in order,
// or join its run here if it has one.
func (d *Dispatcher) enqueue(q *queue, claimed []store.Claimed) {
	if len(claimed) == 0 {
		return
	}
	sort.SliceStable(claimed, func(i, j int) bool { return claimed[i].Job.EventSequence < claimed[j].Job.EventSequence })
	d.leases.hold(claimed)
	d.local.Add(int64(len(claimed)))
	var units []unit
	for _, g := range bySubscription(claimed) {
		switch {
		case g[0].Subscription.MaxInFlight > 1:
			for _, c := range g {
				units = append(units, unit{first: c})
			}
		case d.runs.join(g[0].Job.SubscriptionID, g):
		default:
			units = append(units, d.runs.begin(g[0].Job.SubscriptionID, g))
		}
	}
	d.offer(q, units)
}

// offer queues units held here and gives back what does not fit.
func (d *Dispatcher) offer(q *queue, units []unit) {
	var rest []store.Claimed
	for _, u := range q.offer(units) {
		rest = append(rest, d.runs.jobs(u)...)
	}
	if len(rest) > 0 {
		d.release(rest)
		d.undrain(store.SubscriptionsOfClaimed(rest)) // their jobs are pending again
		d.answered(len(rest))
	}
}
