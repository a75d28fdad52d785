// Package housekeeping runs the hub's periodic database tasks — retention
// and the job counts behind the streaming_hub_jobs gauge — on one replica
// at a time: every replica tries each pass, and the store's lock
// (a PostgreSQL advisory lock) lets one of them run it.
package housekeeping

import (
	"context"
	"log/slog"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// LockName names the lock a pass runs under.
const LockName = "housekeeping"

// Store is the part of the store housekeeping uses.
type Store interface {
	store.Retention
	CountJobs(ctx context.Context) (map[hub.JobStatus]int64, error)
}

// Config configures a Housekeeper. Zero durations keep that kind of row
// forever.
type Config struct {
	Store   Store
	Metrics *metrics.Metrics // nil disables metrics
	Logger  *slog.Logger     // nil discards
	Now     func() time.Time // nil means time.Now

	Interval time.Duration // between passes; 0 means 1 minute
	// Retention bounds: succeeded jobs (and attempts) after completion,
	// dead letters after dead-lettering, events after arrival (unless a
	// job may still send them).
	JobRetention, DLQRetention, InboxRetention time.Duration
	// Batch bounds each delete (0 means 1000); Budget bounds the deleting
	// in one pass (0 means 30s), so a backlog is worked off over several
	// passes instead of holding the lock for long.
	Batch  int
	Budget time.Duration
}

// Housekeeper runs passes.
type Housekeeper struct {
	cfg Config
}

// New returns a Housekeeper with cfg's defaults filled in.
func New(cfg Config) *Housekeeper {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 1000
	}
	if cfg.Budget <= 0 {
		cfg.Budget = 30 * time.Second
	}
	return &Housekeeper{cfg: cfg}
}

// Run makes a pass every Interval until ctx ends.
func (h *Housekeeper) Run(ctx context.Context) {
	t := time.NewTicker(h.cfg.Interval)
	defer t.Stop()
	for {
		if _, _, err := h.Pass(ctx); err != nil && ctx.Err() == nil {
			h.cfg.Logger.Error("housekeeping pass failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Pass runs one pass if no other replica is running one: it deletes what
// is past retention, in batches, until nothing is left or the budget is
// spent, then samples the job counts. It reports whether it ran and what
// it deleted.
func (h *Housekeeper) Pass(ctx context.Context) (ran bool, deleted store.PruneResult, err error) {
	ran, err = h.cfg.Store.Exclusive(ctx, LockName, func(ctx context.Context) error {
		var err error
		deleted, err = h.prune(ctx)
		if err != nil {
			return err
		}
		return h.countJobs(ctx)
	})
	h.count(ran, err, deleted)
	if !ran && err == nil {
		// Another replica samples the counts; stale ones here would
		// disagree with its.
		if m := h.cfg.Metrics; m != nil {
			m.Jobs.Reset()
		}
	}
	return ran, deleted, err
}

func (h *Housekeeper) prune(ctx context.Context) (store.PruneResult, error) {
	now := h.cfg.Now()
	p := store.PruneParams{Batch: h.cfg.Batch}
	if h.cfg.JobRetention > 0 {
		p.SucceededBefore = now.Add(-h.cfg.JobRetention)
	}
	if h.cfg.DLQRetention > 0 {
		p.DeadLettersBefore = now.Add(-h.cfg.DLQRetention)
	}
	if h.cfg.InboxRetention > 0 {
		p.EventsBefore = now.Add(-h.cfg.InboxRetention)
	}
	var total store.PruneResult
	start := time.Now()
	for {
		r, err := h.cfg.Store.Prune(ctx, p)
		total.SucceededJobs += r.SucceededJobs
		total.DeadLetters += r.DeadLetters
		total.Events += r.Events
		if err != nil || !r.Full(h.cfg.Batch) || time.Since(start) > h.cfg.Budget || ctx.Err() != nil {
			if total != (store.PruneResult{}) {
				h.cfg.Logger.Info("retention deleted rows", "succeeded_jobs", total.SucceededJobs,
					"dead_letters", total.DeadLetters, "events", total.Events)
			}
			return total, err
		}
	}
}

func (h *Housekeeper) countJobs(ctx context.Context) error {
	m := h.cfg.Metrics
	if m == nil {
		return nil
	}
	counts, err := h.cfg.Store.CountJobs(ctx)
	if err != nil {
		return err
	}
	for status, n := range counts {
		m.Jobs.WithLabelValues(string(status)).Set(float64(n))
	}
	return nil
}

func (h *Housekeeper) count(ran bool, err error, deleted store.PruneResult) {
	m := h.cfg.Metrics
	if m == nil {
		return
	}
	switch {
	case err != nil:
		m.HousekeepingPasses.WithLabelValues("error").Inc()
	case ran:
		m.HousekeepingPasses.WithLabelValues("ran").Inc()
	default:
		m.HousekeepingPasses.WithLabelValues("skipped").Inc()
	}
	m.RetentionDeleted.WithLabelValues("succeeded_jobs").Add(float64(deleted.SucceededJobs))
	m.RetentionDeleted.WithLabelValues("dead_letters").Add(float64(deleted.DeadLetters))
	m.RetentionDeleted.WithLabelValues("events").Add(float64(deleted.Events))
}
