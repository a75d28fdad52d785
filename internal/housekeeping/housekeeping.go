// Package housekeeping runs the hub's periodic database tasks — retention,
// the job counts behind the streaming_hub_jobs gauge, the hourly check of
// destinations' client certificates and, on PostgreSQL, the weekly
// partitions ahead — on one replica at a time: every replica
// tries each pass, and the store's lock (a PostgreSQL advisory lock) lets
// one of them run it.
package housekeeping

import (
	"context"
	"errors"
	"log/slog"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// LockName names the lock a pass runs under.
const LockName = "housekeeping"

// PartitionsLockName names the lock a partitions pass runs under.
const PartitionsLockName = "partitions"

// Store is the part of the store housekeeping uses.
type Store interface {
	store.Retention
	store.Certificates
	CountJobs(ctx context.Context) (map[hub.JobStatus]int64, error)
	PruneRollups(ctx context.Context, before time.Time) (int, error)
	PruneDLQRecords(ctx context.Context, before time.Time, batch int) (int, error)
}

// Config configures a Housekeeper; config.Defaults fills the settings.
type Config struct {
	config.Housekeeping

	Store   Store
	Metrics *metrics.Metrics
	Logger  *slog.Logger     // nil discards
	Now     func() time.Time // nil means time.Now
}

func (c Config) check() error {
	ch := config.Check{Of: "housekeeping.Config"}
	ch.Require("Store", c.Store != nil)
	ch.Require("Metrics", c.Metrics != nil)
	config.Positive(&ch, "Interval", c.Interval)
	config.Positive(&ch, "DLQRetention", c.DLQRetention)
	config.Positive(&ch, "InboxRetention", c.InboxRetention)
	config.Positive(&ch, "JobRetention", c.JobRetention)
	config.Positive(&ch, "Batch", c.Batch)
	config.Positive(&ch, "Budget", c.Budget)
	config.Positive(&ch, "HealthWindow", c.HealthWindow)
	config.Positive(&ch, "PartitionInterval", c.PartitionInterval)
	config.Positive(&ch, "PartitionFutureWeeks", c.PartitionFutureWeeks)
	return ch.Err()
}

// Housekeeper runs passes.
type Housekeeper struct {
	cfg Config
	// When the producers' DLQ records were last pruned and the idempotency
	// keys last reaped here: each waits its own interval (DLQPruneInterval,
	// IdempotencyReapInterval) between passes.
	lastDLQPrune, lastReap time.Time
	// When client certificates were last checked here (at most every
	// config.DefaultCertificateCheckInterval).
	lastCertCheck time.Time
}

// New returns a Housekeeper.
func New(cfg Config) (*Housekeeper, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Housekeeper{cfg: cfg}, nil
}

// Run makes a pass every Interval and, on a store with time partitions, a
// partitions pass at once and every PartitionInterval (sooner again when
// the tables were busy), until ctx ends.
func (h *Housekeeper) Run(ctx context.Context) {
	t := time.NewTicker(h.cfg.Interval)
	defer t.Stop()
	pt := time.NewTimer(h.partitionsPass(ctx))
	defer pt.Stop()
	for {
		if _, _, err := h.Pass(ctx); err != nil && ctx.Err() == nil {
			h.cfg.Logger.Error("housekeeping pass failed", "err", err)
		}
	wait:
		select {
		case <-ctx.Done():
			return
		case <-pt.C:
			pt.Reset(h.partitionsPass(ctx))
			goto wait
		case <-t.C:
		}
	}
}

// partitionsBusyRetry is how soon a partitions pass that found the
// tables busy runs again (PartitionInterval when that is sooner).
const partitionsBusyRetry = time.Minute

// partitionsPass runs a partitions pass and says when the next is due.
// Busy tables are the hub's own load, not a fault: a warning, and the
// weeks still missing are tried again in a minute; the weeks ahead
// (PartitionFutureWeeks) leave ample time for that.
func (h *Housekeeper) partitionsPass(ctx context.Context) (next time.Duration) {
	_, _, err := h.Partitions(ctx)
	switch {
	case err == nil || ctx.Err() != nil:
	case errors.Is(err, store.ErrPartitionsBusy):
		retry := min(partitionsBusyRetry, h.cfg.PartitionInterval)
		h.cfg.Logger.Warn("partitions pass deferred", "err", err, "retry_in", retry.String())
		return retry
	default:
		h.cfg.Logger.Error("partitions pass failed", "err", err)
	}
	return h.cfg.PartitionInterval
}

// Partitions makes, unless another replica is doing it, the partitions of
// this week and of the PartitionFutureWeeks after it that do not exist
// yet (docs/performance.md), so inserts land in their week rather than the
// default partition. A store without time partitions (SQLite) has nothing to
// do.
func (h *Housekeeper) Partitions(ctx context.Context) (ran bool, made int, err error) {
	p, ok := h.cfg.Store.(store.Partitioner)
	if !ok {
		return false, 0, nil
	}
	ran, err = h.cfg.Store.Exclusive(ctx, PartitionsLockName, func(ctx context.Context) error {
		var err error
		made, err = p.EnsurePartitions(ctx, h.cfg.Now(), h.cfg.PartitionFutureWeeks)
		return err
	})
	if made > 0 {
		h.cfg.Logger.Info("partitions made", "partitions", made, "weeks_ahead", h.cfg.PartitionFutureWeeks)
	}
	return ran, made, err
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
		// The producers' DLQ records (docs/lerian-platform.md) live as long
		// as dead letters.
		if h.due(h.lastDLQPrune, h.cfg.DLQPruneInterval) {
			if err := h.pruneDLQ(ctx); err != nil {
				return err
			}
			h.lastDLQPrune = h.cfg.Now()
		}
		// Health rollups past the health window (few rows: one per
		// subscription and 5 minutes).
		if _, err := h.cfg.Store.PruneRollups(ctx, h.cfg.Now().Add(-h.cfg.HealthWindow)); err != nil {
			return err
		}
		if h.due(h.lastReap, h.cfg.IdempotencyReapInterval) {
			if err := h.reapIdempotencyKeys(ctx); err != nil {
				return err
			}
			h.lastReap = h.cfg.Now()
		}
		if h.due(h.lastCertCheck, config.DefaultCertificateCheckInterval) {
			if _, err := h.CheckCertificates(ctx); err != nil {
				return err
			}
			h.lastCertCheck = h.cfg.Now()
		}
		return h.countJobs(ctx)
	})
	h.count(ran, err, deleted)
	if !ran && err == nil {
		// Another replica samples the counts; stale ones here would
		// disagree with its.
		h.cfg.Metrics.Jobs.Reset()
	}
	return ran, deleted, err
}

func (h *Housekeeper) prune(ctx context.Context) (store.PruneResult, error) {
	now := h.cfg.Now()
	p := store.PruneParams{
		Batch:             h.cfg.Batch,
		SucceededBefore:   now.Add(-h.cfg.JobRetention),
		DeadLettersBefore: now.Add(-h.cfg.DLQRetention),
		EventsBefore:      now.Add(-h.cfg.InboxRetention),
		// PostgreSQL drops whole weeks past the bounds (docs/operations.md), unless
		// PARTITION_RETENTION_ENABLED=false: then rows go in batches.
		ByPartition: h.cfg.PartitionRetention,
	}
	if h.cfg.PartitionRetention && h.cfg.PartitionRetentionHorizon > 0 {
		// PARTITION_RETENTION_HORIZON keeps events this long instead.
		p.EventsBefore = now.Add(-h.cfg.PartitionRetentionHorizon)
	}
	var total store.PruneResult
	start := time.Now()
	for {
		r, err := h.cfg.Store.Prune(ctx, p)
		total.SucceededJobs += r.SucceededJobs
		total.DeadLetters += r.DeadLetters
		total.Events += r.Events
		total.Partitions += r.Partitions
		if err != nil || !r.Full(h.cfg.Batch) || time.Since(start) > h.cfg.Budget || ctx.Err() != nil {
			if total != (store.PruneResult{}) {
				h.cfg.Logger.Info("retention deleted rows", "succeeded_jobs", total.SucceededJobs,
					"dead_letters", total.DeadLetters, "events", total.Events, "partitions_dropped", total.Partitions)
			}
			return total, err
		}
	}
}

func (h *Housekeeper) countJobs(ctx context.Context) error {
	m := h.cfg.Metrics
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

// CheckCertificates emits hub.subscription.certificate_expiring for every
// enabled subscription whose client certificate expires within
// hub.CertificateExpiringWithin, or has expired, and logs a warning for
// each. The event's id names the subscription and the day, so a check
// that runs again the same day writes nothing new: it is once a day per
// subscription, whichever replica runs it. It returns how many events it
// wrote.
func (h *Housekeeper) CheckCertificates(ctx context.Context) (emitted int, err error) {
	subs, err := h.cfg.Store.ListClientCertificateSubscriptions(ctx)
	if err != nil {
		return 0, err
	}
	now := h.cfg.Now()
	var events []hub.Event
	for _, s := range subs {
		sum, notAfter, ok := hub.ClientCertificateInfo(s.Destination.ClientCertificate)
		if !ok || notAfter.Sub(now) > hub.CertificateExpiringWithin {
			continue
		}
		h.cfg.Logger.Warn("client certificate expiring", "tenant_id", s.TenantID, "subscription_id", s.ID,
			"client_certificate_sha256", sum, "expires_at", notAfter.UTC().Format(time.RFC3339),
			"expires_in_days", store.ExpiresInDays(notAfter, now))
		events = append(events, store.CertificateExpiringEvent(s, sum, notAfter, now))
	}
	if len(events) == 0 {
		return 0, nil
	}
	return h.cfg.Store.EmitOperational(ctx, events)
}

// due says whether a task last run at last and run every every is due
// now; a zero interval runs it on every pass.
func (h *Housekeeper) due(last time.Time, every time.Duration) bool {
	return last.IsZero() || h.cfg.Now().Sub(last) >= every
}
