package dispatch

import (
	"context"
	"sync"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// The claimer: it keeps the local queue fed with what the happy path
// (jobs born leased, docs/architecture.md "The writer") does not
// bring, namely retries, backlogs, other processes' jobs and what
// recovery gives back. The store is its one wake-up source (ListenJobs:
// new jobs named by subscription, and the jobs born leased here); its
// hints say which subscriptions a claim should name.

// listen hears of the jobs ingest creates (in this process, and on
// PostgreSQL in every process sharing the database) and wakes the claim
// loop with their subscriptions: a targeted claim, costing in proportion
// to them, not to every subscription.
func (d *Dispatcher) listen(ctx context.Context, listening chan<- struct{}) {
	var once sync.Once
	ready := func() { once.Do(func() { close(listening) }) }
	defer ready()
	err := d.cfg.Store.ListenJobs(ctx, store.ListenParams{
		Ready: ready,
		OnJobs: func(subs []string) {
			if subs == nil {
				d.Wake()
				return
			}
			d.ledger.hints.add(subs)
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
	d.ledger.fullWanted.Store(true)
	more := false // the last full claim filled its batch
	var lastFull time.Time
	for !d.gate.isStopping() {
		room := d.ledger.room()
		if room <= 0 {
			select {
			case <-d.gate.stopping:
			case <-d.ledger.roomFreed:
			}
			continue
		}
		if !d.heart.alive() {
			d.waitForWork() // claims nothing it might not keep
			continue
		}
		p := store.ClaimParams{Batch: min(d.cfg.ClaimBatch, room), Lease: d.heldLease(), Run: d.cfg.RunLength, Owner: d.heart.id(),
			Token: hub.NewID("lease", d.now())}
		// The safety poll runs on time even while targeted claims keep the
		// loop busy: a subscription whose announcement was lost (or whose
		// targeted claim found its row held by another process) is found
		// within IdleInterval however busy its neighbours are.
		full := d.ledger.fullWanted.Swap(false) || more || time.Since(lastFull) >= d.cfg.IdleInterval
		if full {
			lastFull = time.Now()
		}
		if !full {
			if p.Subscriptions = d.ledger.hints.take(); len(p.Subscriptions) == 0 {
				d.waitForWork()
				continue
			}
		}
		p.Exclude = d.dests.excluded()
		done, ok := d.gate.mayClaim()
		if !ok {
			return
		}
		seq := d.ledger.hints.now()
		// Not canceled by the stop: a claim cut off after the database
		// committed it would strand its jobs until their leases expire.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		d.ledger.placing.RLock() // births wait until these jobs are queued (Born)
		claimed, err := d.cfg.Store.ClaimJobs(cctx, p)
		cancel()
		if err != nil {
			// Its answer may be what was lost: what the claim took after
			// all is held before anything else is placed (births wait), or
			// an ordered subscription's later jobs would pass it.
			claimed = d.reclaim(ctx, p.Token)
		}
		done()
		if err != nil && !d.gate.isStopping() {
			d.ledger.storeFailed()
			d.cfg.Logger.Error("claiming jobs failed; retrying", "err", err)
		}
		if p.Owner != d.heart.id() && len(claimed) > 0 {
			// Taken over meanwhile: the jobs are under the old name.
			d.ledger.release(claimed)
			claimed = nil
		}
		if err == nil {
			d.ledger.hints.claimed(claimed, p, seq)
		}
		d.ledger.enqueue(q, claimed)
		d.ledger.placing.RUnlock()
		// A claim that filled its batch may have left more: go on.
		more = full && err == nil && len(claimed) == p.Batch
		if !full && err == nil && len(claimed) == p.Batch {
			d.ledger.hints.add(p.Subscriptions)
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
	if next, ok := d.ledger.due.next(); ok {
		wait = min(wait, max(next.Sub(d.now()), 0))
	}
	select {
	case <-d.gate.stopping:
	case <-d.wake:
		d.ledger.fullWanted.Store(true)
	case <-d.idleAfter(wait):
		d.ledger.due.pass(d.now())
		d.ledger.fullWanted.Store(true)
	case <-d.ledger.hints.ready:
	}
}

// reclaim finds what a claim whose answer was lost took after all
// (store.Reclaim), trying until the database answers or ctx ends.
func (d *Dispatcher) reclaim(ctx context.Context, token string) []store.Claimed {
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		jobs, err := d.cfg.Store.Reclaim(rctx, token)
		cancel()
		if err == nil {
			if len(jobs) > 0 {
				d.cfg.Logger.Warn("a claim whose answer was lost had taken jobs after all: they are held here", "jobs", len(jobs))
			}
			return jobs
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}
