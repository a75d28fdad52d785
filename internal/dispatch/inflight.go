package dispatch

import (
	"context"
	"sync"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// The in-flight set: the local queue of work held here, the workers'
// admission of each unit (its destination's share), and the attempts
// awaiting their answers, an ordered run's one at a time.

// queue is the local queue of claimed work waiting for a worker: single
// jobs, and runs of an ordered subscription's jobs. Claim loops and
// completers (which claim the next jobs of the subscriptions they free)
// offer to it without blocking; once it is closed, offers are refused.
type queue struct {
	mu     sync.RWMutex
	ch     chan unit
	closed bool
}

// offer queues what fits and returns the rest.
func (q *queue) offer(units []unit) (rest []unit) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	for i, u := range units {
		if q.closed {
			return units[i:]
		}
		select {
		case q.ch <- u:
		default:
			return units[i:]
		}
	}
	return nil
}

// takeAll returns what no worker took, leaving the queue open.
func (q *queue) takeAll() []unit {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []unit
	for {
		select {
		case u := <-q.ch:
			out = append(out, u)
		default:
			return out
		}
	}
}

// close stops offers and returns what no worker took.
func (q *queue) close() []unit {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	var left []unit
	for {
		select {
		case u := <-q.ch:
			left = append(left, u)
		default:
			close(q.ch)
			return left
		}
	}
}

// start admits one unit of work into the in-flight set and sends its
// first request; the wait for the answer (and, for a run, the next jobs,
// one at a time) goes on in its own goroutine. A tenant with no room at
// the destination (its fair share of the destination's share is taken)
// makes the work wait here, parked at the destination, without an
// attempt or a database write; it starts when an attempt there ends and
// the tenant has room, and claims leave the tenant's subscriptions there
// alone meanwhile (docs/delivery.md, "One receiver host").
func (d *Dispatcher) start(ctx context.Context, u unit, flying *sync.WaitGroup) {
	// A unit is one subscription's: one destination address for all.
	c := u.first
	address, tenant := c.Subscription.Destination.Address(), c.Job.TenantID
	dest := destinationOf(address)
	if !d.dests.admit(dest, tenant, c.Job.SubscriptionID, c.Subscription.MaxInFlight) {
		d.dests.park(dest, tenant, u)
		return
	}
	d.launch(ctx, u, dest, tenant, address, flying)
}

// roomMade returns what launches the units parked at a destination that
// now start (hosts.leave, hosts.observe) and hands the subscriptions freed
// there back to claims. held: the caller keeps a slot of the in-flight
// set (a run going on), so each unit waits for its own slot in a goroutine
// of its own: runs that all wait for a slot while holding one would never
// get it.
func (d *Dispatcher) roomMade(ctx context.Context, flying *sync.WaitGroup, held bool) func([]parkedUnit, []string) {
	return func(start []parkedUnit, freed []string) {
		if len(freed) > 0 {
			d.ledger.hints.add(freed) // no longer excluded from claims
		}
		for _, p := range start {
			if d.gate.isStopping() || !d.heart.alive() {
				// Not started after all: given back with the rest
				// parked, when the stop ends (or dropped, when taken
				// over).
				d.dests.repark(p)
				continue
			}
			if !held {
				d.launch(ctx, p.u, p.dest, p.tenant, p.u.first.Subscription.Destination.Address(), flying)
				continue
			}
			flying.Add(1)
			go func() {
				defer flying.Done()
				d.launch(ctx, p.u, p.dest, p.tenant, p.u.first.Subscription.Destination.Address(), flying)
			}()
		}
	}
}

// launch sends the first request of a unit admitted at its destination
// and waits for its answers in a goroutine of its own.
func (d *Dispatcher) launch(ctx context.Context, u unit, dest, tenant, address string, flying *sync.WaitGroup) {
	c := u.first
	d.slots <- struct{}{} // waits while the in-flight set is full
	a := d.prepare(ctx, c, address)
	flying.Add(1)
	go func() {
		defer flying.Done()
		defer func() {
			<-d.slots
			d.roomMade(ctx, flying, false)(d.dests.leave(dest, tenant, a.outcome, a.rtt))
		}()
		for {
			// The result is written behind, in a batch: the next job of a
			// run does not wait for it.
			d.result(d.await(a))
			d.ledger.answered(1)
			if u.run == nil {
				return
			}
			if d.gate.isStopping() {
				rest := d.ledger.runs.drain(u.run)
				d.ledger.release(rest)
				d.ledger.answered(len(rest))
				return
			}
			if a.out.Shed {
				// Throttled, or shed by an open breaker: the rest of the
				// ordered run waits with it, until the same time and in
				// order (a later job must not be the token's or the
				// probe's, and get there first), and so do the jobs born
				// here after it until a claim takes it again.
				rest := d.ledger.runs.drain(u.run)
				d.ledger.runs.giveBack(append([]store.Claimed{a.c}, rest...))
				for _, c := range rest {
					d.result(d.waitWith(c, a))
				}
				d.ledger.answered(len(rest))
				return
			}
			next, ok := d.ledger.runs.take(u.run)
			if !ok {
				return
			}
			// The run keeps its slot; the host's limit hears this answer,
			// and work parked there starts if it grew.
			d.roomMade(ctx, flying, true)(d.dests.observe(dest, a.outcome, a.rtt))
			a = d.prepare(ctx, next, address)
		}
	}()
}

// waitWith is the completion of c, a job of the same run as a that a's
// throttle or breaker made wait: c waits until the same time, without an
// attempt, holding its ordered subscription as a shed does.
func (d *Dispatcher) waitWith(c store.Claimed, a *attempt) store.Completion {
	w := &attempt{c: c, out: store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken},
		SubscriptionID: c.Job.SubscriptionID}}
	if !a.throttled.IsZero() {
		d.throttle(w, a.throttled)
		return w.out
	}
	d.shed(w, a.out.NextAttemptAt)
	w.out.Hold = a.out.Hold
	d.cfg.Metrics.Shed.Inc()
	return w.out
}

// result hands one job's result to the writer, written behind.
func (d *Dispatcher) result(c store.Completion) { d.w.Result(c) }
