package dispatch

import (
	"sync"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// unit is one piece of work in the local queue: a job, or the head of an
// ordered subscription's run (its next jobs wait in run, in order, and
// are attempted one at a time after it).
type unit struct {
	first store.Claimed
	run   *run
}

// run is an ordered subscription's jobs held here, attempted strictly one
// at a time in sequence order. Jobs claimed or born later join it at the
// back while it lasts, so a busy ordered subscription goes from one job to
// the next with no database round trip between them
// (docs/architecture.md, "The writer").
type run struct {
	sub  string
	next []store.Claimed // not started yet, in order
	done bool
}

// runs are the ordered subscriptions' runs of this process.
type runs struct {
	mu    sync.Mutex
	bySub map[string]*run
	// gaveBack are ordered subscriptions of which this process gave back
	// (released) a job it held, with the oldest such job's sequence: until
	// a claim takes that job again, no later job of theirs born here may
	// be sent, or it would overtake the one given back.
	gaveBack map[string]int64
}

func newRuns() runs { return runs{bySub: make(map[string]*run), gaveBack: make(map[string]int64)} }

// giveBack notes that the jobs cs (of ordered subscriptions) were given
// back; released reports whether a subscription has such a job waiting.
func (r *runs) giveBack(cs []store.Claimed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		if c.Subscription.MaxInFlight > 1 {
			continue
		}
		if seq, ok := r.gaveBack[c.Job.SubscriptionID]; !ok || c.Job.EventSequence < seq {
			r.gaveBack[c.Job.SubscriptionID] = c.Job.EventSequence
		}
	}
}

func (r *runs) released(sub string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.gaveBack[sub]
	return ok
}

// reclaimed notes a claim's jobs of one ordered subscription (g, in
// order): once a claim took the oldest job given back, or a later one
// (claims take pending jobs oldest first, so that one is done), later
// births may follow again. A claim committed before the job was given
// back holds only earlier jobs.
func (r *runs) reclaimed(g []store.Claimed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sub := g[0].Job.SubscriptionID
	if seq, ok := r.gaveBack[sub]; ok && g[len(g)-1].Job.EventSequence >= seq {
		delete(r.gaveBack, sub)
	}
}

// join appends cs (one ordered subscription's jobs, in order) to its run
// here; false when it has none (the caller begins one).
func (r *runs) join(sub string, cs []store.Claimed) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	x := r.bySub[sub]
	if x == nil {
		return false
	}
	x.next = append(x.next, cs...)
	return true
}

// begin starts the run of cs (one ordered subscription's jobs, in order):
// the unit to queue.
func (r *runs) begin(sub string, cs []store.Claimed) unit {
	r.mu.Lock()
	defer r.mu.Unlock()
	x := &run{sub: sub, next: append([]store.Claimed(nil), cs[1:]...)}
	r.bySub[sub] = x
	return unit{first: cs[0], run: x}
}

// take returns the run's next job; when none is left the run ends and
// later jobs of the subscription begin a new one.
func (r *runs) take(x *run) (store.Claimed, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(x.next) == 0 {
		r.end(x)
		return store.Claimed{}, false
	}
	c := x.next[0]
	x.next = x.next[1:]
	return c, true
}

// drain ends the run and returns the jobs it still had waiting.
func (r *runs) drain(x *run) []store.Claimed {
	if x == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	rest := x.next
	x.next = nil
	r.end(x)
	return rest
}

func (r *runs) end(x *run) {
	x.done = true
	if r.bySub[x.sub] == x {
		delete(r.bySub, x.sub)
	}
}

// jobs are the unit's jobs: its first and, for a run, those waiting (the
// run ends).
func (r *runs) jobs(u unit) []store.Claimed {
	return append([]store.Claimed{u.first}, r.drain(u.run)...)
}

// dropAll ends every run and returns how many jobs they still had
// waiting: the process was taken over.
func (r *runs) dropAll() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.bySub {
		n += len(x.next)
		x.next = nil
		x.done = true
	}
	clear(r.bySub)
	clear(r.gaveBack)
	return n
}

// targetedBatch is how many jobs a claim naming subs subscriptions (a
// targeted claim, a hand-off) may take: a whole run for each (RunLength),
// and at least ClaimBatch, within the room. A claim shares its batch out
// tenant round by tenant round, so a batch of ClaimBatch over a hundred
// ordered subscriptions gave each a run of two or three jobs, and each
// of them waited for the writer's next hand-off two or three attempts
// later (docs/performance.md, "A burst").
func targetedBatch(cfg config.Dispatch, room, subs int) int {
	return min(room, max(cfg.ClaimBatch, cfg.RunLength*subs))
}
