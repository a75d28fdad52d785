package dispatch

import (
	"sync"

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
// (docs/architecture.md, "The commit protocol").
type run struct {
	sub  string
	next []store.Claimed // not started yet, in order
	done bool
}

// runs are the ordered subscriptions' runs of this process.
type runs struct {
	mu    sync.Mutex
	bySub map[string]*run
}

func newRuns() runs { return runs{bySub: make(map[string]*run)} }

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
