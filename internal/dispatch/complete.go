package dispatch

import (
	"context"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/crashpoint"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// completer writes results behind, in batches across subscriptions and
// events (docs/architecture.md, "The commit protocol"): a batch is
// written once it holds FlushSize results or its first result has waited
// FlushInterval, whichever comes first. Nothing waits for the write but
// the lease's renewal: the next job of an ordered run was sent when this
// one's answer came. The interval is measured on the process's own timer,
// not the dispatcher's clock: it bounds a batch's wait, not a schedule.
func (d *Dispatcher) completer(ctx context.Context, results <-chan store.Completion, q *queue) {
	batch := make([]store.Completion, 0, d.cfg.FlushSize)
	t := time.NewTimer(d.cfg.FlushInterval)
	defer t.Stop()
	for c := range results {
		batch = append(batch[:0], c)
		t.Reset(d.cfg.FlushInterval)
	more:
		for len(batch) < d.cfg.FlushSize {
			select {
			case c, ok := <-results:
				if !ok {
					break more
				}
				batch = append(batch, c)
			case <-t.C:
				break more
			}
		}
		crashpoint.Reach(crashpoint.Unwritten)
		d.takeBack(q, d.flush(ctx, batch))
	}
}

// freed is what written results free, handed back to the claimer
// (takeBack) rather than fed to it from here: the next jobs that hand-off
// claims took in the same transactions, and the subscriptions whose next
// jobs a claim may now look for.
type freed struct {
	handedOff []handedOff
	subs      []string
}

// handedOff is one hand-off claim's jobs and what it asked; placed ends
// the hold on births it took (Dispatcher.placing) once they are queued.
type handedOff struct {
	claimed []store.Claimed
	p       store.ClaimParams
	seq     uint64 // hints.now() before it
	placed  func()
}

func (f *freed) add(g freed) {
	f.handedOff = append(f.handedOff, g.handedOff...)
	f.subs = append(f.subs, g.subs...)
}

// flush writes a batch and, while running, claims in the same transaction
// the next jobs of the subscriptions it frees (as many as the local queue
// has room for): a busy subscription goes from one job to the next without
// a separate claim. Once the stop began it only writes.
//
// A result is never given up while the process runs for a reason a retry
// may cure (docs/operations.md, "Results that cannot be written"): the
// write is retried with back-off, waiting on the dispatcher's clock, for
// as long as the database stays away, and the leases of the batch stay
// held (renewed once the database answers again), so an outage of any
// length does not make an answered job be attempted again. A retry first
// asks which results the failed try wrote after all (its COMMIT went
// through, its answer was lost) and writes only the rest. A batch the
// database refuses for good (store.IsPermanent) is split until the result
// it refuses is alone; that one is given up to lease recovery. Only the
// end of ctx (the shutdown deadline) abandons a batch; then its leases
// expire and the jobs are delivered again, at least once.
func (d *Dispatcher) flush(ctx context.Context, batch []store.Completion) (out freed) {
	id := d.unwritten.begin()
	defer d.unwritten.end(id)
	for wait, tries := 50*time.Millisecond, 1; ; wait, tries = min(2*wait, maxResultWait), tries+1 {
		if tries > 1 {
			var f freed
			batch, f = d.unrecorded(batch)
			if out.add(f); len(batch) == 0 {
				return out
			}
		}
		f, err := d.write(batch)
		if err == nil {
			out.add(f)
			return out
		}
		d.storeFailed()
		d.unwritten.failed(id, d.now(), err)
		if store.IsPermanent(err) {
			out.add(d.split(ctx, batch, err))
			return out
		}
		d.cfg.Logger.Error("recording delivery results failed; retrying until the database answers", "results", len(batch),
			"tries", tries, "next_try_in", wait, "err", err)
		if !d.sleep(ctx, wait) {
			d.cfg.Logger.Error("stopped before these results were recorded: their leases will expire and the jobs be delivered again", "results", len(batch))
			d.forgetAll(batch)
			return out
		}
	}
}

// unrecorded drops from a batch whose write failed the results that write
// recorded after all (store.ResultsRecorded): writing them again would log
// their attempts twice, or be fenced on their own lease. When the store
// cannot tell (it is still away), the whole batch is tried again.
func (d *Dispatcher) unrecorded(batch []store.Completion) ([]store.Completion, freed) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	recorded, err := d.cfg.Store.ResultsRecorded(ctx, batch)
	cancel()
	if err != nil || len(recorded) == 0 {
		return batch, freed{}
	}
	done := make(map[string]bool, len(recorded))
	for _, id := range recorded {
		done[id] = true
	}
	var rest, written []store.Completion
	for _, c := range batch {
		if done[c.JobID] {
			written = append(written, c)
		} else {
			rest = append(rest, c)
		}
	}
	d.cfg.Logger.Info("results found written by a try whose answer was lost", "results", len(written))
	d.account(written, nil)
	return rest, freed{subs: store.SubscriptionsOf(written)}
}

// split writes the halves of a batch the database refused for good, each
// with the usual retries, so one result it cannot take holds up no other.
// A result refused alone is given up: its lease is no longer renewed, so
// it expires and the job is recovered and delivered again.
func (d *Dispatcher) split(ctx context.Context, batch []store.Completion, err error) freed {
	if len(batch) > 1 {
		d.cfg.Logger.Warn("the database refused a batch of delivery results; writing it in halves to find the result it refuses",
			"results", len(batch), "err", err)
		half := len(batch) / 2
		out := d.flush(ctx, batch[:half])
		out.add(d.flush(ctx, batch[half:]))
		return out
	}
	c := batch[0]
	d.forgetAll(batch)
	d.cfg.Metrics.ResultsGivenUp.Inc()
	d.cfg.Logger.Error("the database refused this delivery result for good; it is given up, and the job will be recovered "+
		"when its lease expires and delivered again", "job", c.JobID, "subscription", c.SubscriptionID, "status", c.Status, "err", err)
	return freed{}
}

// maxResultWait is the longest wait between two tries of a result write.
const maxResultWait = 5 * time.Second

// write is one try of flush: the batch's results, and the hand-off claim
// unless the stop began (Stop waits for a hand-off in progress).
func (d *Dispatcher) write(batch []store.Completion) (freed, error) {
	var next *store.ClaimParams
	var seq uint64
	claimed := func() {}
	// No hand-off to a destination whose breaker is shedding, nor while a
	// claim across all subscriptions is due: that one goes first.
	// Nor to a subscription known drained: the claim would find nothing.
	if subs, room := d.hints.undrained(handOffTargets(batch)), d.room(); len(subs) > 0 && room > 0 && !d.fullWanted.Load() {
		if done, ok := d.mayClaim(); ok {
			claimed = done
			// A hand-off may take a whole run of an ordered subscription.
			next = &store.ClaimParams{Batch: min(room, max(d.cfg.ClaimBatch, d.cfg.RunLength)), Lease: d.heldLease(), Subscriptions: subs,
				Run: d.cfg.RunLength, Exclude: d.dests.excluded(), Owner: d.owner}
			seq = d.hints.now()
		}
	}
	// Not canceled by the stop: the results of attempts in flight are
	// written while stopping. A hand-off claim holds births back until
	// its jobs are queued (takeBack).
	placed := func() {}
	if next != nil {
		d.placing.RLock()
		placed = d.placing.RUnlock
	}
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	res, err := d.complete(wctx, batch, next)
	cancel()
	claimed()
	if err != nil {
		placed()
		return freed{}, err
	}
	crashpoint.Reach(crashpoint.Written)
	if next != nil {
		return freed{handedOff: []handedOff{{claimed: res.Claimed, p: *next, seq: seq, placed: placed}}}, nil
	}
	return freed{subs: store.SubscriptionsOf(batch)}, nil
}

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
		m.CompletionsFenced.Add(float64(len(fencedIDs)))
		m.Redeliveries.WithLabelValues("fenced").Add(float64(len(fencedIDs)))
		d.cfg.Logger.Info("results not recorded: the lease had been lost to another worker", "jobs", fencedIDs)
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
