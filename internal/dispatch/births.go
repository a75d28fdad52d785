package dispatch

import (
	"github.com/lerianstudio/streaming-hub/internal/crashpoint"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// maxBirths bounds the room one ingest transaction is offered: the claim
// loop is not starved of room while a big batch is written.
const maxBirths = 512

// Offer is asked by this process's ingest before each transaction
// (store.Births; docs/architecture.md, "The writer"): it
// reserves room for jobs born leased to this dispatcher, unless it is not
// running, is stopping, or has no room.
func (d *Dispatcher) Offer() *store.BirthOffer {
	if d.ledger.q.Load() == nil || d.gate.isStopping() || !d.heart.alive() {
		return nil
	}
	n := d.ledger.reserve(maxBirths)
	if n <= 0 {
		return nil
	}
	o := &store.BirthOffer{Owner: d.heart.id(), Token: hub.NewID("lease", d.now()), Lease: d.heldLease(),
		Room: int(n), Exclude: d.dests.excluded()}
	d.offerSeq.Store(o.Token, d.ledger.hints.now())
	return o
}

// Born takes the jobs the committed ingest transaction leased to this
// dispatcher (none when it failed) and gives back the rest of the room
// reserved. Each is held (its lease renewed) and queued like a claimed
// job; an ordered subscription's join its run here, or begin one. Born
// places jobs between claims (placing), so the run of a claim that took
// an ordered subscription's earlier jobs is already here to join. A job
// of an ordered subscription of which this process gave a job back is
// given back too: sent now, it could overtake that one.
func (d *Dispatcher) Born(o *store.BirthOffer, jobs []store.Claimed) {
	d.ledger.answered(o.Room - len(jobs)) // the room not used
	seq, _ := d.offerSeq.LoadAndDelete(o.Token)
	if len(jobs) == 0 {
		return
	}
	crashpoint.Reach(crashpoint.Born)
	d.cfg.Metrics.JobsBorn.Add(float64(len(jobs)))
	d.ledger.placing.Lock() // no claim is between its commit and its queueing
	defer d.ledger.placing.Unlock()
	q := d.ledger.q.Load()
	var units []unit
	var back []store.Claimed
	var ordered []string
	for _, g := range bySubscription(jobs) {
		if g[0].Subscription.MaxInFlight <= 1 {
			ordered = append(ordered, g[0].Job.SubscriptionID)
		}
		c := g[0]
		switch {
		case q == nil || d.gate.isStopping() || o.Owner != d.heart.id():
			// Not running, or born to this process's old name (taken over
			// meanwhile): given back.
			back = append(back, g...)
		case c.Subscription.MaxInFlight <= 1 && d.ledger.runs.released(c.Job.SubscriptionID):
			// An earlier job of it was given back: it goes first.
			back = append(back, g...)
			ordered = ordered[:len(ordered)-1]
		case c.Subscription.MaxInFlight > 1:
			for _, c := range g {
				units = append(units, unit{first: c})
			}
		case d.ledger.runs.join(c.Job.SubscriptionID, g):
		default:
			// First of its subscription here, or behind jobs all sent
			// already (their results written, or being written): no
			// claim of them is between its commit and its queueing
			// (placing), and none was given back (released).
			units = append(units, d.ledger.runs.begin(c.Job.SubscriptionID, g))
		}
	}
	d.ledger.leases.hold(jobs)
	if s, ok := seq.(uint64); ok && len(jobs) < o.Room {
		// Room left over: every job of the batch that its ordered
		// subscription could take was born. A full offer may have cut a
		// subscription's jobs short, the rest pending: not drained.
		d.ledger.hints.born(ordered, s)
	}
	d.ledger.returned(back)
	if q != nil {
		d.ledger.offer(q, units)
	} else if len(units) > 0 {
		var rest []store.Claimed
		for _, u := range units {
			rest = append(rest, d.ledger.runs.jobs(u)...)
		}
		d.ledger.runs.giveBack(rest)
		d.ledger.release(rest)
		d.ledger.answered(len(rest))
	}
}

// bySubscription groups jobs by subscription, each group in sequence
// order, the groups in the order of their first job.
func bySubscription(jobs []store.Claimed) [][]store.Claimed {
	var out [][]store.Claimed
	at := make(map[string]int)
	for _, c := range jobs {
		if k, ok := at[c.Job.SubscriptionID]; ok {
			out[k] = append(out[k], c)
			continue
		}
		at[c.Job.SubscriptionID] = len(out)
		out = append(out, []store.Claimed{c})
	}
	return out
}
