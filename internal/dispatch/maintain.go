package dispatch

import (
	"context"
	"log/slog"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// maintainStore is the part of the store the maintainer uses.
type maintainStore interface {
	RecoverLeases(ctx context.Context, p store.RecoverParams) (store.RecoverResult, error)
	LeasedTo(ctx context.Context, owner string, before time.Time) ([]store.LeasedJob, error)
	ReleaseJobs(ctx context.Context, leases []store.JobLease) error
	DeadLetterOrphans(ctx context.Context) (int, error)
	AutoDisable(ctx context.Context, g store.AutoDisable) ([]store.Disabled, error)
	AdvanceBackfills(ctx context.Context, p store.AdvanceBackfillsParams) (store.AdvanceBackfillsResult, error)
}

// maintainer is the dispatcher's part that keeps the jobs moving whatever
// happens to processes (docs/architecture.md, "The dispatcher's parts"):
// it takes over expired leases, gives back the jobs leased under this
// process's name that it no longer holds, auto-disables, dead-letters
// orphans and advances backfills. It reads the ledger (the leases held,
// the last store failure) and wakes the claimer when it made jobs due.
type maintainer struct {
	cfg         config.Dispatch
	autoDisable *store.AutoDisable // nil: auto-disable off
	store       maintainStore
	ledger      *ledger
	heart       *heart
	stopping    <-chan struct{} // closed when the dispatcher stops
	wake        func()          // jobs may be due anywhere: claim across all subscriptions
	metrics     *metrics.Metrics
	log         *slog.Logger
	now         func() time.Time // UTC
}

// loop runs a maintenance pass every MaintenanceInterval and, in
// between, looks for expired leases every recoverEvery: a crashed
// replica's jobs are taken over within about a second of their lease's
// end, not at the next pass.
func (m *maintainer) loop(ctx context.Context) {
	every := m.recoverEvery()
	t := time.NewTicker(every)
	defer t.Stop()
	passEvery := max(int(m.cfg.MaintenanceInterval/every), 1) // ticks
	for tick := 0; ; tick++ {
		var err error
		if tick%passEvery == 0 {
			err = m.Maintain(ctx)
		} else if m.ledger.recoveryAllowed() {
			err = m.recover(ctx, false)
		}
		if err != nil && ctx.Err() == nil {
			m.ledger.storeFailed()
			m.log.Error("dispatch maintenance failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-m.stopping:
			return
		case <-t.C:
		}
	}
}

// recoverEvery is how often lapsed heartbeats and expired leases are
// looked for.
func (m *maintainer) recoverEvery() time.Duration {
	return min(m.cfg.MaintenanceInterval, max(m.cfg.Lease/20, 100*time.Millisecond))
}

// Maintain runs one maintenance pass: recover expired leases (poisoning
// repeat offenders), auto-disable subscriptions whose failure span reached
// both gates, and dead-letter the waiting jobs of disabled or deleted
// subscriptions, then advance the running backfills. Every delivery
// replica runs it: each step locks the rows it changes. (Retention and job counts are housekeeping's, one replica at
// a time.)
//
// Leases are not recovered until the database has answered this process
// for a whole lease since it last failed: after an outage, every live
// process first renews its leases and records the results it kept
// (flush never gives them up), so only the leases of processes that died
// are recovered, and an answered job is not attempted again.
func (m *maintainer) Maintain(ctx context.Context) error {
	if m.ledger.recoveryAllowed() {
		if err := m.recover(ctx, true); err != nil {
			return err
		}
	}
	if m.heart.alive() {
		if err := m.sweep(ctx); err != nil {
			return err
		}
	}
	if g := m.autoDisable; g != nil {
		disabled, err := m.store.AutoDisable(ctx, *g)
		if err != nil {
			return err
		}
		reportDisabled(m.metrics, m.log, disabled)
	}
	if _, err := m.store.DeadLetterOrphans(ctx); err != nil {
		return err
	}
	return m.backfill(ctx)
}

// backfill advances the running backfills
// (docs/backfill.md) by up to
// BackfillPassChunks chunks each, a transaction per chunk, so a big window
// never holds one long transaction and other tenants' claims keep flowing
// between chunks. The jobs it queues (and those a finished backfill stops
// holding) are claimed at once.
func (m *maintainer) backfill(ctx context.Context) error {
	queued, finished := 0, 0
	defer func() {
		if queued+finished > 0 {
			m.log.Debug("backfills advanced", "queued", queued, "finished", finished)
			m.wake()
		}
	}()
	for range m.cfg.BackfillPassChunks {
		res, err := m.store.AdvanceBackfills(ctx, store.AdvanceBackfillsParams{Chunk: m.cfg.BackfillChunk})
		if err != nil {
			return err
		}
		queued, finished = queued+res.Queued, finished+res.Finished
		for _, b := range res.Advanced {
			if b.State == hub.BackfillDone {
				m.log.Info("backfill done", "subscription_id", b.SubscriptionID, "tenant_id", b.TenantID,
					"matched", b.Matched, "queued", b.Queued, "skipped", b.Skipped)
			}
		}
		if !res.More() {
			return nil
		}
		if queued > 0 {
			m.wake() // deliver the first chunks while the next are walked
		}
	}
	return nil
}

// recover returns expired leases to their queues (or to poison); a
// maintenance pass also reconciles the in-flight counts.
func (m *maintainer) recover(ctx context.Context, reconcile bool) error {
	rec, err := m.store.RecoverLeases(ctx, store.RecoverParams{PoisonThreshold: m.cfg.PoisonThreshold, Limit: 1000,
		Lease: m.heart.lapse, Self: m.heart.id(), Reconcile: reconcile})
	if err != nil {
		return err
	}
	m.metrics.LeasesRecovered.WithLabelValues("recovered").Add(float64(rec.Recovered))
	m.metrics.LeasesRecovered.WithLabelValues("poisoned").Add(float64(rec.Poisoned))
	// Counted here, once, by the one process that takes them over: every
	// job recovered as attempted is sent again though its result was never
	// written, and may have reached its receiver. Run-ahead jobs never
	// started (rec.Unstarted) are sent for the first time.
	m.metrics.Redeliveries.WithLabelValues("unwritten_result").Add(float64(rec.Recovered))
	if rec.Recovered+rec.Poisoned+rec.Unstarted > 0 || rec.Processes > 0 {
		m.log.Warn("took over jobs whose process stopped (its heartbeat lapsed) or whose lease ended without a result",
			"processes", rec.Processes, "recovered", rec.Recovered, "never_started", rec.Unstarted, "poisoned", rec.Poisoned)
		m.wake()
	}
	return nil
}

// sweep gives back the jobs in flight under this process's name that it
// no longer holds (a hand-over lost with its commit's answer, a give-back
// that failed, a result given up): with heartbeats nothing else would
// ever free them while the process lives. Only jobs leased a while ago
// are looked at, so none is caught between its commit and its hand-over.
func (m *maintainer) sweep(ctx context.Context) error {
	owner := m.heart.id()
	found, err := m.store.LeasedTo(ctx, owner, m.now().Add(-sweepAfter))
	if err != nil || len(found) == 0 {
		return err
	}
	var lost []store.JobLease
	for _, j := range found {
		if !m.ledger.leases.held(j.JobID, j.LeaseToken) {
			lost = append(lost, j.JobLease)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	m.log.Warn("jobs in flight under this process's name that it no longer held are given back", "jobs", len(lost))
	return m.store.ReleaseJobs(ctx, lost)
}

// sweepAfter is how long a job must have been leased here before the
// sweep may give it back: longer than any hand-over takes (a claim holds
// births back for at most its 10 s timeout), short enough that a job a
// failed give-back left in flight waits seconds, not a minute (an ordered
// subscription's later jobs wait behind it).
const sweepAfter = 15 * time.Second
