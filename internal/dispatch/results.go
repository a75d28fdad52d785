package dispatch

import (
	"context"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/writer"
)

// The dispatcher's side of the writer (docs/architecture.md, "The
// writer"): results go to it as attempts are answered (Dispatcher.result)
// and are written behind, with the records ingest took, in one
// transaction per batch; the writer asks here what to claim with them
// (HandOff) and tells what was written (Written) or given up (GivenUp).
var _ writer.Delivery = (*Dispatcher)(nil)

// HandOff is what to write with a batch of results: the auto-disable
// gates and, while running, the claim of the next jobs of the
// subscriptions they free (as many as the local queue has room for): a
// busy subscription goes from one job to the next without a separate
// claim. No hand-off to a destination whose breaker is shedding, nor
// while a claim across all subscriptions is due (that one goes first), nor
// to a subscription known drained (the claim would find nothing), nor
// once the stop began (Stop waits for a hand-off in progress). placed
// queues the jobs the hand-off took, after the commit.
func (d *Dispatcher) HandOff(batch []store.Completion) (store.CompleteParams, func([]store.Claimed, bool)) {
	p := store.CompleteParams{AutoDisable: d.cfg.AutoDisable}
	subs, room := d.hints.undrained(handOffTargets(batch)), d.room()
	if len(subs) == 0 || room <= 0 || d.fullWanted.Load() || !d.heart.alive() {
		// Their next jobs are for the next claim (unless known drained).
		return p, func([]store.Claimed, bool) { d.hints.add(d.hints.undrained(store.SubscriptionsOf(batch))) }
	}
	done, ok := d.mayClaim()
	if !ok {
		return p, func([]store.Claimed, bool) {}
	}
	// A hand-off may take a whole run of an ordered subscription.
	// Its own token: if the batch's answer is lost, the writer finds
	// with it what the hand-off took (store.Reclaim).
	next := store.ClaimParams{Batch: min(room, max(d.cfg.ClaimBatch, d.cfg.RunLength)), Lease: d.heldLease(), Subscriptions: subs,
		Run: d.cfg.RunLength, Exclude: d.dests.excluded(), Owner: d.heart.id(), Token: hub.NewID("lease", d.now())}
	p.Next = &next
	seq := d.hints.now()
	// Births wait until the jobs it takes are queued (placing).
	d.placing.RLock()
	return p, func(claimed []store.Claimed, written bool) {
		done()
		defer d.placing.RUnlock()
		if !written {
			d.hints.add(d.hints.undrained(store.SubscriptionsOf(batch)))
			return
		}
		q := d.q.Load()
		if q == nil || next.Owner != d.heart.id() {
			d.release(claimed) // taken over meanwhile, or not running
			return
		}
		d.hints.claimed(claimed, next, seq)
		d.enqueue(q, claimed)
	}
}

// Written accounts for results written (res.Fenced: not written, their
// lease lost) and the subscriptions auto-disable turned off.
func (d *Dispatcher) Written(cs []store.Completion, res store.CompleteResult) {
	d.account(cs, res.Fenced)
	d.disabled(res.Disabled)
}

// GivenUp forgets results that will not be written: the database refused
// one for good, or the process stops. Their jobs are still this process's
// in the database; the lease sweep gives them back (sweepLeases).
func (d *Dispatcher) GivenUp(cs []store.Completion) { d.forgetAll(cs) }

// Unwritten is the readiness check named results (docs/operations.md,
// "Results that cannot be written").
func (d *Dispatcher) Unwritten(ctx context.Context) error { return d.w.Unwritten(d.cfg.Lease)(ctx) }

// complete writes one batch of results (claiming next as asked) and
// accounts for them.
func (d *Dispatcher) complete(ctx context.Context, cs []store.Completion, next *store.ClaimParams) (store.CompleteResult, error) {
	res, err := d.cfg.Store.CompleteJobs(ctx, store.CompleteParams{Completions: cs, AutoDisable: d.cfg.AutoDisable, Next: next})
	if err != nil {
		return res, err
	}
	d.account(cs, res.Fenced)
	d.disabled(res.Disabled)
	return res, nil
}

// account does what follows a batch of results written (fenced: those
// not written, their lease lost): their leases are no longer renewed,
// the claim loop learns when the waiting ones come due, and the metrics
// count them.
func (d *Dispatcher) account(cs []store.Completion, fencedIDs []string) {
	d.forgetAll(cs) // written (or fenced): nothing left to renew
	fenced := make(map[string]bool, len(fencedIDs))
	for _, id := range fencedIDs {
		fenced[id] = true
	}
	m := d.cfg.Metrics
	now := d.now()
	for _, c := range cs {
		if fenced[c.JobID] {
			continue
		}
		if c.Status == hub.JobPending && c.LastError == canceledAtFence {
			// Canceled at the fence, its job back to pending under a
			// lease still this process's: it is sent again though the
			// canceled request may have reached its receiver. Counted
			// here, once its result is written; a result fenced (the job
			// taken over meanwhile) is counted by whoever took it over.
			m.Redeliveries.WithLabelValues("fenced").Inc()
		}
		if c.Status == hub.JobPending {
			d.hints.undrain([]string{c.SubscriptionID}) // it has a job again
			if c.NextAttemptAt.After(now) {
				d.due.add(c.NextAttemptAt) // the claim loop wakes then
			}
		}
		switch c.Status {
		case hub.JobSucceeded:
			m.JobsCompleted.WithLabelValues(string(c.Status), "").Inc()
		case hub.JobDeadLettered:
			m.JobsCompleted.WithLabelValues(string(c.Status), c.DeadLetterReason).Inc()
			d.cfg.Logger.Warn("delivery dead-lettered", "job", c.JobID, "subscription", c.SubscriptionID,
				"reason", c.DeadLetterReason, "last_error", c.LastError)
		}
	}
	if len(fencedIDs) > 0 {
		// Not a redelivery count: whoever took the jobs over counted it
		// when it did (docs/delivery.md, "Crashes").
		m.CompletionsFenced.Add(float64(len(fencedIDs)))
		d.cfg.Logger.Info("results not recorded: the job had been taken over by another process", "jobs", fencedIDs)
	}
}

// forgetAll stops renewing the leases of a batch of results.
func (d *Dispatcher) forgetAll(cs []store.Completion) {
	leases := make([]store.JobLease, len(cs))
	for i, c := range cs {
		leases[i] = c.JobLease
	}
	d.leases.forget(leases...)
}

// observeSuccess and observeFailure record an attempt's metrics.
func (d *Dispatcher) observeSuccess(c store.Claimed, a *hub.Attempt) {
	m := d.cfg.Metrics
	m.Attempts.WithLabelValues("success").Inc()
	m.AttemptDuration.WithLabelValues("success").Observe(a.Duration.Seconds())
	m.EndToEnd.Observe(d.now().Sub(c.Job.EnqueuedAt).Seconds())
}

func (d *Dispatcher) observeFailure(c store.Claimed, a *hub.Attempt, err error) {
	m := d.cfg.Metrics
	m.Attempts.WithLabelValues("failure").Inc()
	m.AttemptDuration.WithLabelValues("failure").Observe(a.Duration.Seconds())
	d.cfg.Logger.Debug("delivery attempt failed", "job", c.Job.ID, "subscription", c.Job.SubscriptionID,
		"attempt", c.Job.Attempts+1, "error", a.Error, "detail", destination.Detail(err))
}

// handOffTargets lists the subscriptions of a batch whose next jobs may be
// claimed at once: all but those shed by an open breaker.
func handOffTargets(batch []store.Completion) []string {
	shed := make(map[string]bool)
	for _, c := range batch {
		if c.Shed {
			shed[c.SubscriptionID] = true
		}
	}
	var out []string
	for _, id := range store.SubscriptionsOf(batch) {
		if !shed[id] {
			out = append(out, id)
		}
	}
	return out
}

// disabled accounts for subscriptions auto-disabled.
func (d *Dispatcher) disabled(subs []store.Disabled) {
	for _, s := range subs {
		d.cfg.Metrics.AutoDisables.Inc()
		d.cfg.Logger.Warn("subscription auto-disabled: its destination kept failing for the whole window (sustained and spread); "+
			"its waiting deliveries are dead-lettered as subscription_disabled; POST /v1/subscriptions/{id}/verify re-enables it",
			"subscription", s.SubscriptionID, "reason", s.Reason)
	}
}
