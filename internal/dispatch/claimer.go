package dispatch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// claimStore is the part of the store the claimer uses.
type claimStore interface {
	ClaimJobs(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error)
	Reclaim(ctx context.Context, token string) ([]store.Claimed, error)
	ListenJobs(ctx context.Context, p store.ListenParams) error
}

// claimer is the dispatcher's part that keeps the local queue fed with
// what the happy path (jobs born leased, docs/architecture.md "The
// writer") does not bring, namely retries, backlogs, other processes'
// jobs and what recovery gives back (docs/architecture.md, "The
// dispatcher's parts"). The store is its one wake-up source (ListenJobs:
// new jobs named by subscription, and the jobs born leased here); the
// ledger's hints say which subscriptions a claim should name, its room
// how many jobs it may take, and it holds what was claimed.
type claimer struct {
	cfg      config.Dispatch
	store    claimStore
	ledger   *ledger
	heart    *heart
	gate     *stopGate
	excluded func() []string // subscriptions whose destination has no room (hosts.excluded)
	log      *slog.Logger
	now      func() time.Time // UTC
	// wakeCh: new jobs may exist anywhere, claim across all
	// subscriptions. idleAfter is the timer of the loop's waits
	// (time.After unless a test replaces it).
	wakeCh    chan struct{}
	idleAfter func(time.Duration) <-chan time.Time
}

// wake tells an idle claimer new jobs may exist anywhere: it claims
// across all subscriptions.
func (c *claimer) wake() {
	c.ledger.hints.wake()
	c.ledger.fullWanted.Store(true)
	select {
	case c.wakeCh <- struct{}{}:
	default:
	}
}

// listen hears of the jobs ingest creates (in this process, and on
// PostgreSQL in every process sharing the database) and wakes the claim
// loop with their subscriptions: a targeted claim, costing in proportion
// to them, not to every subscription.
func (c *claimer) listen(ctx context.Context, listening chan<- struct{}) {
	var once sync.Once
	ready := func() { once.Do(func() { close(listening) }) }
	defer ready()
	err := c.store.ListenJobs(ctx, store.ListenParams{
		Ready: ready,
		OnJobs: func(subs []string) {
			if subs == nil {
				c.wake()
				return
			}
			c.ledger.hints.add(subs)
		},
		OnLost: func(err error) {
			c.log.Warn("listening for new jobs failed; dialing again (meanwhile the idle poll finds them)", "err", err)
		},
	})
	if err != nil && ctx.Err() == nil {
		c.log.Error("listening for new jobs stopped; the idle poll finds them", "err", err)
	}
}

// loop keeps the local queue fed. New jobs wake it with their
// subscriptions (ListenJobs), and claims then target those, as they
// target the subscriptions whose jobs just finished, which is what keeps
// a busy hub busy. Claims across all subscriptions (costing in proportion
// to them) run at the start, when the listening connection was lost, when
// a job put back to wait here becomes due, and on the slow idle poll
// (IdleInterval), the safety net for jobs made due by time elsewhere.
func (c *claimer) loop(ctx context.Context, q *queue) {
	c.ledger.fullWanted.Store(true)
	more := false // the last full claim filled its batch
	var lastFull time.Time
	for !c.gate.isStopping() {
		room := c.ledger.room()
		if room <= 0 {
			select {
			case <-c.gate.stopping:
			case <-c.ledger.roomFreed:
			}
			continue
		}
		if !c.heart.alive() {
			c.waitForWork() // claims nothing it might not keep
			continue
		}
		p := store.ClaimParams{Batch: min(c.cfg.ClaimBatch, room), Lease: c.heart.lapse, Run: c.cfg.RunLength, Owner: c.heart.id(),
			Token: hub.NewID("lease", c.now())}
		// The safety poll runs on time even while targeted claims keep the
		// loop busy: a subscription whose announcement was lost (or whose
		// targeted claim found its row held by another process) is found
		// within IdleInterval however busy its neighbours are.
		full := c.ledger.fullWanted.Swap(false) || more || time.Since(lastFull) >= c.cfg.IdleInterval
		if full {
			lastFull = time.Now()
		}
		if !full {
			if p.Subscriptions = c.ledger.hints.take(); len(p.Subscriptions) == 0 {
				c.waitForWork()
				continue
			}
			p.Batch = targetedBatch(c.cfg, room, len(p.Subscriptions))
		}
		p.Exclude = c.excluded()
		done, ok := c.gate.mayClaim()
		if !ok {
			return
		}
		seq := c.ledger.hints.now()
		// Not canceled by the stop: a claim cut off after the database
		// committed it would strand its jobs until their leases expire.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		c.ledger.placing.RLock() // births wait until these jobs are queued (Born)
		claimed, err := c.store.ClaimJobs(cctx, p)
		cancel()
		if err != nil {
			// Its answer may be what was lost: what the claim took after
			// all is held before anything else is placed (births wait), or
			// an ordered subscription's later jobs would pass it.
			claimed = c.reclaim(ctx, p.Token)
		}
		done()
		if err != nil && !c.gate.isStopping() {
			c.ledger.storeFailed()
			c.log.Error("claiming jobs failed; retrying", "err", err)
		}
		if p.Owner != c.heart.id() && len(claimed) > 0 {
			// Taken over meanwhile: the jobs are under the old name.
			c.ledger.release(claimed)
			claimed = nil
		}
		if err == nil {
			c.ledger.hints.claimed(claimed, p, seq)
		}
		c.ledger.enqueue(q, claimed)
		c.ledger.placing.RUnlock()
		// A claim that filled its batch may have left more: go on.
		more = full && err == nil && len(claimed) == p.Batch
		if !full && err == nil && len(claimed) == p.Batch {
			c.ledger.hints.add(p.Subscriptions)
		}
		if err != nil {
			c.waitForWork()
		}
	}
}

// waitForWork waits for new jobs (a targeted claim, or a full one when
// any subscription may have them), freed subscriptions (a targeted
// claim), or the time a job put back to wait here becomes due or the idle
// poll, whichever is first (a full claim).
func (c *claimer) waitForWork() {
	wait := c.cfg.IdleInterval
	if next, ok := c.ledger.due.next(); ok {
		wait = min(wait, max(next.Sub(c.now()), 0))
	}
	select {
	case <-c.gate.stopping:
	case <-c.wakeCh:
		c.ledger.fullWanted.Store(true)
	case <-c.idleAfter(wait):
		c.ledger.due.pass(c.now())
		c.ledger.fullWanted.Store(true)
	case <-c.ledger.hints.ready:
	}
}

// reclaim finds what a claim whose answer was lost took after all
// (store.Reclaim), trying until the database answers, ctx ends or the
// stop begins. A stopping process gives up: it places nothing more, so no
// later job can pass what the lost claim took, and those jobs, under this
// process's name, are taken over once its heartbeat ends. Waiting on
// would hold Stop (it waits for the claims in progress) for as long as
// the database stays away.
func (c *claimer) reclaim(ctx context.Context, token string) []store.Claimed {
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		jobs, err := c.store.Reclaim(rctx, token)
		cancel()
		if err == nil {
			if len(jobs) > 0 {
				c.log.Warn("a claim whose answer was lost had taken jobs after all: they are held here", "jobs", len(jobs))
			}
			return jobs
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.gate.stopping:
			c.log.Warn("stopping before finding what a claim whose answer was lost took: its jobs, if any, "+
				"are taken over once this process's heartbeat ends", "err", err)
			return nil
		case <-time.After(wait):
			c.log.Warn("finding what a claim whose answer was lost took failed; retrying", "err", err)
		}
	}
}
