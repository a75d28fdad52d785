package dispatch

import (
	"context"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// maintainLoop runs a maintenance pass every MaintenanceInterval and, in
// between, looks for expired leases every recoverEvery: a crashed
// replica's jobs are taken over within about a second of their lease's
// end, not at the next pass.
func (d *Dispatcher) maintainLoop(ctx context.Context) {
	every := d.recoverEvery()
	t := time.NewTicker(every)
	defer t.Stop()
	passEvery := max(int(d.cfg.MaintenanceInterval/every), 1) // ticks
	for tick := 0; ; tick++ {
		var err error
		if tick%passEvery == 0 {
			err = d.Maintain(ctx)
		} else if d.ledger.recoveryAllowed() {
			err = d.recover(ctx, false)
		}
		if err != nil && ctx.Err() == nil {
			d.ledger.storeFailed()
			d.cfg.Logger.Error("dispatch maintenance failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-d.stopping:
			return
		case <-t.C:
		}
	}
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
func (d *Dispatcher) Maintain(ctx context.Context) error {
	if d.ledger.recoveryAllowed() {
		if err := d.recover(ctx, true); err != nil {
			return err
		}
	}
	if d.heart.alive() {
		if err := d.sweepLeases(ctx); err != nil {
			return err
		}
	}
	if g := d.cfg.AutoDisable; g != nil {
		disabled, err := d.cfg.Store.AutoDisable(ctx, *g)
		if err != nil {
			return err
		}
		d.disabled(disabled)
	}
	if _, err := d.cfg.Store.DeadLetterOrphans(ctx); err != nil {
		return err
	}
	return d.backfill(ctx)
}

// backfill advances the running backfills
// (docs/backfill.md) by up to
// BackfillPassChunks chunks each, a transaction per chunk, so a big window
// never holds one long transaction and other tenants' claims keep flowing
// between chunks. The jobs it queues (and those a finished backfill stops
// holding) are claimed at once.
func (d *Dispatcher) backfill(ctx context.Context) error {
	queued, finished := 0, 0
	defer func() {
		if queued+finished > 0 {
			d.cfg.Logger.Debug("backfills advanced", "queued", queued, "finished", finished)
			d.Wake()
		}
	}()
	for range d.cfg.BackfillPassChunks {
		res, err := d.cfg.Store.AdvanceBackfills(ctx, store.AdvanceBackfillsParams{Chunk: d.cfg.BackfillChunk})
		if err != nil {
			return err
		}
		queued, finished = queued+res.Queued, finished+res.Finished
		for _, b := range res.Advanced {
			if b.State == hub.BackfillDone {
				d.cfg.Logger.Info("backfill done", "subscription_id", b.SubscriptionID, "tenant_id", b.TenantID,
					"matched", b.Matched, "queued", b.Queued, "skipped", b.Skipped)
			}
		}
		if !res.More() {
			return nil
		}
		if queued > 0 {
			d.Wake() // deliver the first chunks while the next are walked
		}
	}
	return nil
}

// recover returns expired leases to their queues (or to poison); a
// maintenance pass also reconciles the in-flight counts.
func (d *Dispatcher) recover(ctx context.Context, reconcile bool) error {
	rec, err := d.cfg.Store.RecoverLeases(ctx, store.RecoverParams{PoisonThreshold: d.cfg.PoisonThreshold, Limit: 1000,
		Lease: d.heart.lapse, Self: d.heart.id(), Reconcile: reconcile})
	if err != nil {
		return err
	}
	d.cfg.Metrics.LeasesRecovered.WithLabelValues("recovered").Add(float64(rec.Recovered))
	d.cfg.Metrics.LeasesRecovered.WithLabelValues("poisoned").Add(float64(rec.Poisoned))
	// Counted here, once, by the one process that takes them over: every
	// job recovered as attempted is sent again though its result was never
	// written, and may have reached its receiver. Run-ahead jobs never
	// started (rec.Unstarted) are sent for the first time.
	d.cfg.Metrics.Redeliveries.WithLabelValues("unwritten_result").Add(float64(rec.Recovered))
	if rec.Recovered+rec.Poisoned+rec.Unstarted > 0 || rec.Processes > 0 {
		d.cfg.Logger.Warn("took over jobs whose process stopped (its heartbeat lapsed) or whose lease ended without a result",
			"processes", rec.Processes, "recovered", rec.Recovered, "never_started", rec.Unstarted, "poisoned", rec.Poisoned)
		d.Wake()
	}
	return nil
}
