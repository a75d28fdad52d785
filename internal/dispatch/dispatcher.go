package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/dispatch/concurrency"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/transform"
	"github.com/lerianstudio/streaming-hub/internal/writer"
)

// Store is the part of the store the dispatcher uses.
type Store interface {
	ClaimJobs(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error)
	CompleteJobs(ctx context.Context, p store.CompleteParams) (store.CompleteResult, error)
	Write(ctx context.Context, p store.WriteParams) (store.WriteResult, error)
	ResultsRecorded(ctx context.Context, cs []store.Completion) ([]string, error)
	ReleaseJobs(ctx context.Context, leases []store.JobLease) error
	Heartbeat(ctx context.Context, id string, register bool) (bool, error)
	Deregister(ctx context.Context, id string) error
	Reclaim(ctx context.Context, token string) ([]store.Claimed, error)
	LeasedTo(ctx context.Context, owner string, before time.Time) ([]store.LeasedJob, error)
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
	// Writer is the process's one writer (docs/architecture.md, "The
	// writer"), which the dispatcher's results go to and which hands it
	// the jobs born leased to it; the dispatcher is its Delivery. Nil: the
	// dispatcher makes one of its own and runs it (tests, a process that
	// only delivers).
	Writer *writer.Writer
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
	config.Positive(&ch, "StatsFlushInterval", c.StatsFlushInterval)
	config.Positive(&ch, "MaxInFlight", c.MaxInFlight)
	config.Positive(&ch, "MaxPerDestination", c.MaxPerDestination)
	config.Positive(&ch, "RunLength", c.RunLength)
	config.Positive(&ch, "BackfillChunk", c.BackfillChunk)
	config.Positive(&ch, "BackfillPassChunks", c.BackfillPassChunks)
	return ch.Err()
}

// Dispatcher claims, attempts and completes delivery jobs.
type Dispatcher struct {
	cfg Config

	// ledger is what the parts share of the work held here: counts,
	// leases, runs, the local queue, hints.
	ledger *ledger

	// slots is the in-flight set: one token per attempt (or run) awaiting
	// its answer.
	slots chan struct{}
	dests *hosts
	// throttles are the rate-limited subscriptions' token buckets.
	throttles throttles
	// transforms are the subscriptions' compiled jq programs
	// (docs/filters-and-transforms.md).
	transforms transform.Cache

	heart *heart
	// maint is the maintainer: recovery, the lease sweep, auto-disable,
	// orphans, backfills.
	maint *maintainer
	// claims is the claimer: the claim loop and what wakes it.
	claims *claimer
	// results is the completer: hand-offs, and the accounting of the
	// results written.
	results *completer
	// w is the writer results go to; ownWriter is set when the dispatcher
	// made it (and runs it).
	w         *writer.Writer
	ownWriter bool

	// offerSeq is hints.now() at each birth offer (by token).
	offerSeq sync.Map

	randMu sync.Mutex
	rand   *mrand.Rand

	// gate fences claims off once the stop begins.
	gate *stopGate
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
	d := &Dispatcher{cfg: cfg, rand: cfg.Rand,
		ledger: newLedger(cfg.MaxInFlight, cfg.Lease, giveBackTo(cfg.Store, cfg.Logger)),
		slots:  make(chan struct{}, cfg.MaxInFlight),
		dests: newHosts(cfg.MaxPerDestination, cfg.Now, func(c concurrency.Change) {
			cfg.Logger.Debug("destination concurrency limit", "destination", c.Host, "from", c.From, "to", c.To, "why", c.Why,
				"latency", c.Latency, "best", c.Best)
		}),
		heart: newHeart(cfg.Lease, hub.NewID("disp", cfg.Now())),
		gate:  newStopGate(),
		w:     cfg.Writer}
	if d.w == nil {
		w, err := writer.New(writer.Config{FlushSize: cfg.FlushSize, FlushInterval: cfg.FlushInterval,
			StatsInterval: cfg.StatsFlushInterval, Store: cfg.Store, Metrics: cfg.Metrics, Logger: cfg.Logger, Now: cfg.Now})
		if err != nil {
			return nil, err
		}
		d.w, d.ownWriter = w, true
	}
	now := func() time.Time { return cfg.Now().UTC() } // the parts' clock
	d.claims = &claimer{cfg: cfg.Dispatch, store: cfg.Store, ledger: d.ledger, heart: d.heart, gate: d.gate,
		excluded: d.dests.excluded, log: cfg.Logger, now: now, wakeCh: make(chan struct{}, 1), idleAfter: time.After}
	d.maint = &maintainer{cfg: cfg.Dispatch, autoDisable: cfg.AutoDisable, store: cfg.Store, ledger: d.ledger, heart: d.heart,
		stopping: d.gate.stopping, wake: d.claims.wake, metrics: cfg.Metrics, log: cfg.Logger, now: now}
	d.results = &completer{cfg: cfg.Dispatch, autoDisable: cfg.AutoDisable, store: cfg.Store, ledger: d.ledger, heart: d.heart,
		gate: d.gate, excluded: d.dests.excluded, metrics: cfg.Metrics, log: cfg.Logger, now: now}
	d.w.SetDelivery(d)
	return d, nil
}

// Writer is the writer the dispatcher's results go to.
func (d *Dispatcher) Writer() *writer.Writer { return d.w }

// Stop stops claiming: it returns once no claim of Run is in progress, and
// none starts afterwards (or when ctx is done first). Run then gives back
// the claimed jobs no worker started, lets the attempts in flight finish,
// writes their results and returns. Shutdown calls it first, so a stopping
// process takes on no new work (docs/operations.md). A dispatcher runs once:
// Step, the synchronous form, is not fenced.
func (d *Dispatcher) Stop(ctx context.Context) error { return d.gate.stop(ctx) }

// stopGate is the stop's fence on claims. stopping is closed when the
// stop begins: Run's loops stop waiting. Every claim of Run (the claim
// loop's and the completer's hand-offs) holds mu for reading and starts
// only while stopped is false; stop sets it under the write lock, so once
// fenced is closed no claim is in progress and none will start.
type stopGate struct {
	once     sync.Once
	stopping chan struct{}
	mu       sync.RWMutex
	stopped  bool
	fenced   chan struct{}
}

func newStopGate() *stopGate {
	return &stopGate{stopping: make(chan struct{}), fenced: make(chan struct{})}
}

// stop begins the stop and waits for the claims in progress (or ctx).
func (g *stopGate) stop(ctx context.Context) error {
	g.once.Do(func() {
		close(g.stopping)
		go func() {
			g.mu.Lock() // waits for the claims in progress
			g.stopped = true
			g.mu.Unlock()
			close(g.fenced)
		}()
	})
	select {
	case <-g.fenced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("dispatch: stop claiming: %w", ctx.Err())
	}
}

func (g *stopGate) isStopping() bool {
	select {
	case <-g.stopping:
		return true
	default:
		return false
	}
}

// mayClaim reports whether a claim may start; when it may, done must be
// called once the claim has finished (stop waits for it).
func (g *stopGate) mayClaim() (done func(), ok bool) {
	g.mu.RLock()
	if g.stopped || g.isStopping() {
		g.mu.RUnlock()
		return nil, false
	}
	return g.mu.RUnlock, true
}

// Wake tells an idle dispatcher new jobs may exist anywhere: it claims
// across all subscriptions.
func (d *Dispatcher) Wake() { d.claims.wake() }

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
	_, err = d.results.complete(ctx, results, nil)
	return len(claimed), err
}

// Run claims and delivers until Stop is called or ctx is done, then stops
// claiming, gives back the jobs held here that no worker started, lets
// attempts in flight finish, waits for their results to be written, and
// ends its heartbeat. The end of ctx also bounds the drain: results not
// written by then are left to whoever takes the jobs over.
//
// Run first names the process in the database (its heartbeat, docs/
// delivery.md "Crashes"): the jobs it claims and is born are its own
// while the heartbeat is renewed.
//
// Workers take claimed work, prepare it (load, decrypt in memory, sign)
// and send it; the wait for each answer is held in the in-flight set
// (MaxInFlight attempts, a destination's share of them to one
// destination), so the workers go on while destinations think.
func (d *Dispatcher) Run(ctx context.Context) error {
	q := &queue{ch: make(chan unit, d.cfg.MaxInFlight+3*d.cfg.ClaimBatch)}
	ran := make(chan struct{})
	defer close(ran)
	go func() {
		select {
		case <-ctx.Done():
			d.Stop(context.Background())
		case <-ran:
		}
	}()
	if err := d.register(ctx); err != nil {
		return nil // stopped before the database answered
	}
	heartStop, heartDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(heartDone); d.heartLoop(heartStop) }()
	writerDone := make(chan struct{})
	wctx, stopWriter := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWriter()
	if d.ownWriter {
		go func() { defer close(writerDone); d.w.Run(wctx) }()
	} else {
		close(writerDone)
	}
	d.ledger.q.Store(q)

	var workers, flying sync.WaitGroup
	var unstartedMu sync.Mutex
	var unstarted []store.Claimed // taken from the queue after the stop began
	for range d.cfg.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for u := range q.ch {
				if d.gate.isStopping() {
					unstartedMu.Lock()
					unstarted = append(unstarted, d.ledger.runs.jobs(u)...)
					unstartedMu.Unlock()
					continue
				}
				// An attempt in flight finishes even while stopping: its
				// own timeout bounds it.
				d.start(context.WithoutCancel(ctx), u, &flying)
			}
		}()
	}
	maintDone := make(chan struct{})
	go func() { defer close(maintDone); d.maint.loop(ctx) }()
	listenCtx, stopListening := context.WithCancel(ctx)
	listenDone, listening := make(chan struct{}), make(chan struct{})
	go func() { defer close(listenDone); d.claims.listen(listenCtx, listening) }()
	// The first claim (across all subscriptions) starts once new jobs are
	// told: nothing falls between the two.
	select {
	case <-listening:
	case <-listenDone:
	case <-ctx.Done():
	}

	d.claims.loop(ctx, q)
	stopListening()
	<-listenDone

	// Stopping: give back what no worker has started.
	d.Stop(context.Background()) // no hand-off claims from here on
	var left []store.Claimed
	for _, u := range q.close() {
		left = append(left, d.ledger.runs.jobs(u)...)
	}
	d.ledger.release(left)
	workers.Wait()
	d.ledger.release(unstarted)
	flying.Wait()
	var parked []store.Claimed // waiting for room at their destination
	for _, u := range d.dests.unpark() {
		parked = append(parked, d.ledger.runs.jobs(u)...)
	}
	d.ledger.release(parked)
	d.ledger.answered(len(parked))
	<-maintDone
	// The results of the last attempts are written while the heartbeat
	// still says their jobs are this process's: for as long as ctx lasts,
	// or, when it ended already, a last try bounded by lastTry.
	dctx, dcancel := ctx, context.CancelFunc(func() {})
	if ctx.Err() != nil {
		dctx, dcancel = context.WithTimeout(context.WithoutCancel(ctx), lastTry)
	}
	defer dcancel()
	drained := d.w.Drain(dctx) == nil
	if d.ownWriter {
		if d.w.Close(dctx) != nil {
			stopWriter() // what is left is given up
		}
		<-writerDone
	}
	close(heartStop)
	<-heartDone
	if drained {
		// Nothing is held here any more: the row goes, and a job left in
		// flight under this name (a give-back that failed) ends with its
		// own lease.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		d.cfg.Store.Deregister(dctx, d.heart.id())
		cancel()
	}
	return nil
}

// Maintain runs one maintenance pass (maintainer.Maintain).
func (d *Dispatcher) Maintain(ctx context.Context) error { return d.maint.Maintain(ctx) }

// lastTry bounds how long a dispatcher whose context ended waits for its
// last results to be written.
const lastTry = 2 * time.Second

// HostLimit is this process's adaptive limit for a destination address's
// receiver host, and its recent latency (docs/delivery.md, "Concurrency
// that follows the receiver"); ok is false when this process has not sent
// there lately.
func (d *Dispatcher) HostLimit(address string) (HostLimit, bool) {
	return d.dests.snapshot(destinationOf(address))
}
