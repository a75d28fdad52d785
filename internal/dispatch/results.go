package dispatch

import (
	"context"
	"log/slog"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/writer"
)

// The dispatcher's side of the writer (docs/architecture.md, "The
// writer"): results go to it as attempts are answered (Dispatcher.result)
// and are written behind, with the records ingest took, in one
// transaction per batch; the writer asks here what to claim with them
// (HandOff) and tells what was written (Written) or given up (GivenUp).
// The Dispatcher answers it through its completer.
var _ writer.Delivery = (*Dispatcher)(nil)

// completeStore is the part of the store the completer uses.
type completeStore interface {
	CompleteJobs(ctx context.Context, p store.CompleteParams) (store.CompleteResult, error)
}

// completer is the dispatcher's part that takes results in
// (docs/architecture.md, "The dispatcher's parts"): it says what to
// claim with a batch of results (the hand-off), and accounts for what
// was written, fenced or given up, in the ledger (leases forgotten,
// subscriptions undrained, due times) and the metrics. It reads nothing
// of the claimer's: what both need is in the ledger.
type completer struct {
	cfg         config.Dispatch
	autoDisable *store.AutoDisable // nil: auto-disable off
	store       completeStore
	ledger      *ledger
	heart       *heart
	gate        *stopGate
	excluded    func() []string // subscriptions whose destination has no room (hosts.excluded)
	metrics     *metrics.Metrics
	log         *slog.Logger
	now         func() time.Time // UTC
}

// handOff is what to write with a batch of results: the auto-disable
// gates and, while running, the claim of the next jobs of the
// subscriptions they free (as many as the local queue has room for): a
// busy subscription goes from one job to the next without a separate
// claim. No hand-off to a destination whose breaker is shedding, nor
// while a claim across all subscriptions is due (that one goes first), nor
// to a subscription known drained (the claim would find nothing), nor
// once the stop began (Stop waits for a hand-off in progress). placed
// queues the jobs the hand-off took, after the commit.
func (c *completer) handOff(batch []store.Completion) (store.CompleteParams, func([]store.Claimed, bool)) {
	l := c.ledger
	p := store.CompleteParams{AutoDisable: c.autoDisable}
	subs, room := l.hints.undrained(handOffTargets(batch)), l.room()
	if len(subs) == 0 || room <= 0 || l.fullWanted.Load() || !c.heart.alive() {
		// Their next jobs are for the next claim (unless known drained).
		return p, func([]store.Claimed, bool) { l.hints.add(l.hints.undrained(store.SubscriptionsOf(batch))) }
	}
	done, ok := c.gate.mayClaim()
	if !ok {
		return p, func([]store.Claimed, bool) {}
	}
	// A hand-off may take a whole run of each ordered subscription it
	// frees (targetedBatch). Its own token: if the batch's answer is
	// lost, the writer finds with it what the hand-off took
	// (store.Reclaim).
	next := store.ClaimParams{Batch: targetedBatch(c.cfg, room, len(subs)), Lease: c.heart.lapse, Subscriptions: subs,
		Run: c.cfg.RunLength, Exclude: c.excluded(), Owner: c.heart.id(), Token: hub.NewID("lease", c.now())}
	p.Next = &next
	seq := l.hints.now()
	// Births wait until the jobs it takes are queued (placing).
	l.placing.RLock()
	return p, func(claimed []store.Claimed, written bool) {
		done()
		defer l.placing.RUnlock()
		if !written {
			l.hints.add(l.hints.undrained(store.SubscriptionsOf(batch)))
			return
		}
		q := l.queue()
		if q == nil || next.Owner != c.heart.id() {
			l.release(claimed) // taken over meanwhile, or not running
			return
		}
		l.hints.claimed(claimed, next, seq)
		l.enqueue(q, claimed)
	}
}

// written accounts for results written (res.Fenced: not written, their
// lease lost) and the subscriptions auto-disable turned off.
func (c *completer) written(cs []store.Completion, res store.CompleteResult) {
	c.account(cs, res.Fenced)
	reportDisabled(c.metrics, c.log, res.Disabled)
}

// givenUp forgets results that will not be written: the database refused
// one for good, or the process stops. Their jobs are still this process's
// in the database; the lease sweep gives them back (maintainer.sweep).
func (c *completer) givenUp(cs []store.Completion) { c.ledger.forgetAll(cs) }

// complete writes one batch of results (claiming next as asked) and
// accounts for them.
func (c *completer) complete(ctx context.Context, cs []store.Completion, next *store.ClaimParams) (store.CompleteResult, error) {
	res, err := c.store.CompleteJobs(ctx, store.CompleteParams{Completions: cs, AutoDisable: c.autoDisable, Next: next})
	if err != nil {
		return res, err
	}
	c.written(cs, res)
	return res, nil
}

// account does what follows a batch of results written (fenced: those
// not written, their lease lost): their leases are no longer renewed,
// the claim loop learns when the waiting ones come due, and the metrics
// count them.
func (c *completer) account(cs []store.Completion, fencedIDs []string) {
	l := c.ledger
	l.forgetAll(cs) // written (or fenced): nothing left to renew
	fenced := make(map[string]bool, len(fencedIDs))
	for _, id := range fencedIDs {
		fenced[id] = true
	}
	m := c.metrics
	now := c.now()
	for _, r := range cs {
		if fenced[r.JobID] {
			continue
		}
		if r.Status == hub.JobPending && r.LastError == canceledAtFence {
			// Canceled at the fence, its job back to pending under a
			// lease still this process's: it is sent again though the
			// canceled request may have reached its receiver. Counted
			// here, once its result is written; a result fenced (the job
			// taken over meanwhile) is counted by whoever took it over.
			m.Redeliveries.WithLabelValues("fenced").Inc()
		}
		if r.Status == hub.JobPending {
			l.hints.undrain([]string{r.SubscriptionID}) // it has a job again
			if r.NextAttemptAt.After(now) {
				l.due.add(r.NextAttemptAt) // the claim loop wakes then
			}
		}
		switch r.Status {
		case hub.JobSucceeded:
			m.JobsCompleted.WithLabelValues(string(r.Status), "").Inc()
		case hub.JobDeadLettered:
			m.JobsCompleted.WithLabelValues(string(r.Status), r.DeadLetterReason).Inc()
			c.log.Warn("delivery dead-lettered", "job", r.JobID, "subscription", r.SubscriptionID,
				"reason", r.DeadLetterReason, "last_error", r.LastError)
		}
	}
	if len(fencedIDs) > 0 {
		// Not a redelivery count: whoever took the jobs over counted it
		// when it did (docs/delivery.md, "Crashes").
		m.CompletionsFenced.Add(float64(len(fencedIDs)))
		c.log.Info("results not recorded: the job had been taken over by another process", "jobs", fencedIDs)
	}
}

// HandOff, Written and GivenUp are the writer's questions and news
// (writer.Delivery), answered by the completer.
func (d *Dispatcher) HandOff(batch []store.Completion) (store.CompleteParams, func([]store.Claimed, bool)) {
	return d.results.handOff(batch)
}

// Written accounts for results written (res.Fenced: not written, their
// lease lost) and the subscriptions auto-disable turned off.
func (d *Dispatcher) Written(cs []store.Completion, res store.CompleteResult) {
	d.results.written(cs, res)
}

// GivenUp forgets results that will not be written: the database refused
// one for good, or the process stops. Their jobs are still this process's
// in the database; the lease sweep gives them back.
func (d *Dispatcher) GivenUp(cs []store.Completion) { d.results.givenUp(cs) }

// Stopping is closed once Stop begins: the writer then stops looking for
// what a failed batch leased (Stop waits for a hand-off in progress).
func (d *Dispatcher) Stopping() <-chan struct{} { return d.gate.stopping }

// Unwritten is the readiness check named results (docs/operations.md,
// "Results that cannot be written").
func (d *Dispatcher) Unwritten(ctx context.Context) error { return d.w.Unwritten(d.cfg.Lease)(ctx) }

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

// reportDisabled accounts for subscriptions auto-disabled.
func reportDisabled(m *metrics.Metrics, log *slog.Logger, subs []store.Disabled) {
	for _, s := range subs {
		m.AutoDisables.Inc()
		log.Warn("subscription auto-disabled: its destination kept failing for the whole window (sustained and spread); "+
			"its waiting deliveries are dead-lettered as subscription_disabled; POST /v1/subscriptions/{id}/verify re-enables it",
			"subscription", s.SubscriptionID, "reason", s.Reason)
	}
}
