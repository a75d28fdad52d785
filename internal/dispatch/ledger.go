package dispatch

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// ledger is what the dispatcher's parts share of the work held here
// (docs/architecture.md, "The dispatcher's parts"): how many jobs are held
// and the room left, their leases, the ordered subscriptions' runs, the
// local queue, the hints of which subscriptions a claim should name, when
// the jobs put back to wait come due, and when the store last failed. The
// claimer fills it, the completer empties it, the maintainer reads it; no
// part reads another's fields, only the ledger.
type ledger struct {
	maxInFlight int
	// local counts the jobs claimed (or born) here and not yet answered or
	// given back; claims keep it within maxInFlight, which bounds memory.
	local     atomic.Int64
	roomFreed chan struct{}

	// leases are the jobs held here, until each one's result is written
	// or it is given back; they are this process's while its heartbeat is
	// fresh.
	leases leaseRegistry
	// runs are the ordered subscriptions' runs held here; q is Run's local
	// queue (nil when not running), where born jobs are queued too.
	runs runs
	q    atomic.Pointer[queue]
	// placing orders births after claims: a claim holds it (read) from
	// before its store call until its jobs are queued, and Born (write)
	// places born jobs only between claims, so a job born behind an
	// ordered subscription's claimed jobs finds their run here.
	placing sync.RWMutex

	// hints are the claimer's knowledge of subscriptions between claims,
	// fed by what finishes here.
	hints *hints
	// fullWanted is set when a claim across all subscriptions is due (new
	// jobs, the idle poll): until it has run, completions hand off
	// nothing, so hand-offs to busy subscriptions never starve the claim
	// that finds another tenant's new job.
	fullWanted atomic.Bool
	// due holds when the jobs this process put back to wait (retries,
	// throttled and shed jobs) become due: the claim loop wakes then
	// instead of polling.
	due dueTimes

	// lastStoreFailure is when a store call last failed here (since
	// processStart; 0: never): recovery waits a lease after it.
	lease            time.Duration
	lastStoreFailure atomic.Int64

	// giveBack hands leases back to the store (release).
	giveBack func([]store.JobLease)
}

// newLedger returns an empty ledger for at most maxInFlight jobs held,
// whose store failures hold recovery back for a lease, giving leases
// back with giveBack.
func newLedger(maxInFlight int, lease time.Duration, giveBack func([]store.JobLease)) *ledger {
	return &ledger{maxInFlight: maxInFlight, roomFreed: make(chan struct{}, 1), leases: newLeaseRegistry(), runs: newRuns(),
		hints: newHints(), lease: lease, giveBack: giveBack}
}

// giveBackTo is a ledger's giveBack on st: a failure is logged, the
// leases then expire and are recovered.
func giveBackTo(st interface {
	ReleaseJobs(context.Context, []store.JobLease) error
}, log *slog.Logger) func([]store.JobLease) {
	return func(leases []store.JobLease) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := st.ReleaseJobs(ctx, leases); err != nil {
			log.Warn("could not give back leases; they will expire and be recovered", "jobs", len(leases), "err", err)
		}
	}
}

// room is how many more jobs may be claimed.
func (l *ledger) room() int { return l.maxInFlight - int(l.local.Load()) }

// reserve takes up to n of the room left (none when there is none) and
// returns how much it took.
func (l *ledger) reserve(n int64) int64 {
	for {
		held := l.local.Load()
		k := min(int64(l.maxInFlight)-held, n)
		if k <= 0 {
			return 0
		}
		if l.local.CompareAndSwap(held, held+k) {
			return k
		}
	}
}

// answered accounts for n jobs no longer waiting here for an answer.
func (l *ledger) answered(n int) {
	l.local.Add(-int64(n))
	select {
	case l.roomFreed <- struct{}{}:
	default:
	}
}

// queue is Run's local queue; nil when not running.
func (l *ledger) queue() *queue { return l.q.Load() }

// release gives back leases of claimed jobs no worker started.
func (l *ledger) release(cs []store.Claimed) {
	if len(cs) == 0 {
		return
	}
	leases := make([]store.JobLease, len(cs))
	for i, c := range cs {
		leases[i] = store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}
	}
	l.leases.forget(leases...)
	l.giveBack(leases)
}

// forgetAll stops renewing the leases of a batch of results.
func (l *ledger) forgetAll(cs []store.Completion) {
	leases := make([]store.JobLease, len(cs))
	for i, c := range cs {
		leases[i] = c.JobLease
	}
	l.leases.forget(leases...)
}

// enqueue queues claimed jobs, oldest first so a tenant's jobs start in
// arrival order, and gives back what does not fit. The jobs of an ordered
// subscription (a run) go as one unit, attempted one at a time in order,
// or join its run here if it has one.
func (l *ledger) enqueue(q *queue, claimed []store.Claimed) {
	if len(claimed) == 0 {
		return
	}
	sort.SliceStable(claimed, func(i, j int) bool { return claimed[i].Job.EventSequence < claimed[j].Job.EventSequence })
	l.leases.hold(claimed)
	l.local.Add(int64(len(claimed)))
	var units []unit
	for _, g := range bySubscription(claimed) {
		if g[0].Subscription.MaxInFlight <= 1 {
			l.runs.reclaimed(g) // a claim takes pending jobs oldest first
		}
		switch {
		case g[0].Subscription.MaxInFlight > 1:
			for _, c := range g {
				units = append(units, unit{first: c})
			}
		case l.runs.join(g[0].Job.SubscriptionID, g):
		default:
			units = append(units, l.runs.begin(g[0].Job.SubscriptionID, g))
		}
	}
	l.offer(q, units)
}

// offer queues units held here and gives back what does not fit.
func (l *ledger) offer(q *queue, units []unit) {
	var rest []store.Claimed
	for _, u := range q.offer(units) {
		rest = append(rest, l.runs.jobs(u)...)
	}
	l.returned(rest)
}

// returned gives back jobs held here that will not be attempted: an
// ordered subscription's later jobs must not pass them (runs.giveBack),
// and their subscriptions have jobs pending again.
func (l *ledger) returned(cs []store.Claimed) {
	if len(cs) == 0 {
		return
	}
	l.runs.giveBack(cs)
	l.release(cs)
	l.hints.undrain(store.SubscriptionsOfClaimed(cs)) // their jobs are pending again
	l.answered(len(cs))
}

// dropAll drops everything held here that no attempt is working on (the
// process was taken over: it is another's now), without giving it back,
// parked included (the units waiting for room at their destination), and
// returns how many jobs that was.
func (l *ledger) dropAll(parked []unit) int {
	n := 0
	if q := l.q.Load(); q != nil {
		for _, u := range q.takeAll() {
			n += len(l.runs.jobs(u))
		}
	}
	for _, u := range parked {
		n += len(l.runs.jobs(u))
	}
	n += l.runs.dropAll()
	l.leases.clear()
	return n
}

// storeFailed notes that a call to the store failed just now (on the
// process's own monotonic clock).
func (l *ledger) storeFailed() { l.lastStoreFailure.Store(int64(time.Since(processStart))) }

// processStart is the origin of the process's monotonic readings.
var processStart = time.Now()

// recoveryAllowed reports whether the store has answered for a whole lease
// since it last failed here (or never failed): after an outage every live
// process renews its heartbeat first (within a fifth of a lease), so only
// the jobs of processes that died are taken over.
func (l *ledger) recoveryAllowed() bool {
	last := l.lastStoreFailure.Load()
	return last == 0 || time.Since(processStart)-time.Duration(last) >= l.lease
}
