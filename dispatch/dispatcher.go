package dispatch

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/envelope"
	"github.com/lerianstudio/streaming-hub/metrics"
	"github.com/lerianstudio/streaming-hub/store"
)

// Store is the part of the store the dispatcher uses.
type Store interface {
	ClaimJobs(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error)
	CompleteJobs(ctx context.Context, p store.CompleteParams) (store.CompleteResult, error)
	ReleaseJobs(ctx context.Context, leases []store.JobLease) error
	RecoverLeases(ctx context.Context, p store.RecoverParams) (store.RecoverResult, error)
	DeadLetterOrphans(ctx context.Context) (int, error)
	PruneDeadLetters(ctx context.Context, p store.PruneParams) (int, error)
	CountJobs(ctx context.Context) (map[hub.JobStatus]int64, error)
}

// Config configures a Dispatcher. Zero values take the SPEC defaults.
type Config struct {
	Store   Store
	Keyring *envelope.Keyring // opens subscription secrets, in memory only
	Client  *http.Client      // the SSRF-safe webhook client
	Metrics *metrics.Metrics  // nil disables metrics
	Logger  *slog.Logger      // nil discards
	Now     func() time.Time  // the clock; nil means time.Now
	Rand    *mrand.Rand       // jitter source; nil means randomly seeded

	Workers         int           // concurrent attempts; 8
	ClaimBatch      int           // jobs per claim; 16
	IdleInterval    time.Duration // poll interval when idle; 250ms
	Lease           time.Duration // lease of a claimed job; 60s
	PoisonThreshold int           // recoveries before poison; 5
	DLQRetention    time.Duration // how long dead letters are kept; 168h
	// AutoDisable gates; nil turns auto-disable off (the kill switch).
	AutoDisable *store.AutoDisable

	MaintenanceInterval time.Duration // recover leases, sweep, prune, gauges; 5s
	FlushInterval       time.Duration // longest a result waits to be written; 5ms
	FlushSize           int           // results per completion transaction; 128
}

func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = 8
	}
	if c.ClaimBatch <= 0 {
		c.ClaimBatch = 16
	}
	if c.IdleInterval <= 0 {
		c.IdleInterval = 250 * time.Millisecond
	}
	if c.Lease <= 0 {
		c.Lease = 60 * time.Second
	}
	if c.PoisonThreshold <= 0 {
		c.PoisonThreshold = 5
	}
	if c.DLQRetention <= 0 {
		c.DLQRetention = 168 * time.Hour
	}
	if c.MaintenanceInterval <= 0 {
		c.MaintenanceInterval = 5 * time.Second
	}
	if c.FlushInterval <= 0 {
		c.FlushInterval = 5 * time.Millisecond
	}
	if c.FlushSize <= 0 {
		c.FlushSize = 128
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		var seed [16]byte
		rand.Read(seed[:])
		c.Rand = mrand.New(mrand.NewPCG(binary.LittleEndian.Uint64(seed[:8]), binary.LittleEndian.Uint64(seed[8:])))
	}
	return c
}

// Dispatcher claims, attempts and completes delivery jobs.
type Dispatcher struct {
	cfg  Config
	wake chan struct{}

	randMu sync.Mutex
	rand   *mrand.Rand
}

// New returns a dispatcher; Run starts it.
func New(cfg Config) (*Dispatcher, error) {
	if cfg.Store == nil || cfg.Keyring == nil || cfg.Client == nil {
		return nil, errors.New("dispatch: a store, a keyring and a client are required")
	}
	cfg = cfg.withDefaults()
	return &Dispatcher{cfg: cfg, wake: make(chan struct{}, 1), rand: cfg.Rand}, nil
}

// Wake tells an idle dispatcher new jobs exist, so a fresh event does not
// wait for the idle poll.
func (d *Dispatcher) Wake() {
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
	claimed, err := d.cfg.Store.ClaimJobs(ctx, store.ClaimParams{Batch: d.cfg.ClaimBatch, Lease: d.cfg.Lease})
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
	return len(claimed), d.complete(ctx, results)
}

// Run claims and delivers until ctx is done, then stops claiming, gives
// back the leases of claimed jobs not started, lets attempts in flight
// finish, and writes their results.
func (d *Dispatcher) Run(ctx context.Context) error {
	queue := make(chan store.Claimed, d.cfg.Workers)
	results := make(chan store.Completion, d.cfg.Workers*4)
	freed := make(chan struct{}, 1)

	var workers sync.WaitGroup
	for range d.cfg.Workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for c := range queue {
				// An attempt in flight finishes even while stopping: its
				// own timeout bounds it.
				results <- d.deliver(context.WithoutCancel(ctx), c)
				select {
				case freed <- struct{}{}:
				default:
				}
			}
		}()
	}
	completerDone := make(chan struct{})
	go func() { defer close(completerDone); d.completer(results) }()
	maintDone := make(chan struct{})
	go func() { defer close(maintDone); d.maintainLoop(ctx) }()

	d.claimLoop(ctx, queue, freed)

	// Stopping: give back what no worker has started.
	var unstarted []store.JobLease
	for drained := false; !drained; {
		select {
		case c := <-queue:
			unstarted = append(unstarted, store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken})
		default:
			drained = true
		}
	}
	close(queue)
	if len(unstarted) > 0 {
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := d.cfg.Store.ReleaseJobs(rctx, unstarted); err != nil {
			d.cfg.Logger.Warn("could not give back leases; they will expire and be recovered", "jobs", len(unstarted), "err", err)
		}
		cancel()
	}
	workers.Wait()
	close(results)
	<-completerDone
	<-maintDone
	return nil
}

func (d *Dispatcher) claimLoop(ctx context.Context, queue chan store.Claimed, freed chan struct{}) {
	idle := time.NewTimer(0)
	defer idle.Stop()
	for ctx.Err() == nil {
		space := cap(queue) - len(queue)
		if space == 0 {
			select {
			case <-ctx.Done():
			case <-freed:
			}
			continue
		}
		claimed, err := d.cfg.Store.ClaimJobs(ctx, store.ClaimParams{Batch: min(d.cfg.ClaimBatch, space), Lease: d.cfg.Lease})
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.Error("claiming jobs failed; retrying", "err", err)
		}
		// Oldest first, so a tenant's jobs start in arrival order.
		sort.SliceStable(claimed, func(i, j int) bool { return claimed[i].Job.EventSequence < claimed[j].Job.EventSequence })
		for _, c := range claimed {
			queue <- c
		}
		if len(claimed) > 0 && err == nil {
			continue
		}
		idle.Reset(d.cfg.IdleInterval)
		select {
		case <-ctx.Done():
		case <-d.wake:
		case <-idle.C:
		}
	}
}
