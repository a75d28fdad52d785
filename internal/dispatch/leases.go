package dispatch

import (
	"sync"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// leaseRegistry is the lease registry: the leases held here (claimed or
// born), renewed every sixth of a lease until each job's result is written
// or given back, and by subscription, so that a job born behind an ordered
// subscription's earlier jobs knows whether this process still holds them.
type leaseRegistry struct {
	mu    sync.Mutex
	byJob map[string]heldLease
	bySub map[string]int
}

// heldLease is one lease held here.
type heldLease struct {
	token, sub string
}

func newLeaseRegistry() leaseRegistry {
	return leaseRegistry{byJob: make(map[string]heldLease), bySub: make(map[string]int)}
}

// hold registers the leases of jobs now held here.
func (r *leaseRegistry) hold(cs []store.Claimed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cs {
		if _, ok := r.byJob[c.Job.ID]; !ok {
			r.bySub[c.Job.SubscriptionID]++
		}
		r.byJob[c.Job.ID] = heldLease{token: c.LeaseToken, sub: c.Job.SubscriptionID}
	}
}

// forget ends the renewal of leases (those still under their token).
func (r *leaseRegistry) forget(leases ...store.JobLease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range leases {
		h, ok := r.byJob[l.JobID]
		if !ok || h.token != l.LeaseToken {
			continue
		}
		delete(r.byJob, l.JobID)
		if r.bySub[h.sub]--; r.bySub[h.sub] <= 0 {
			delete(r.bySub, h.sub)
		}
	}
}

// holds reports whether a lease of subscription sub is held here.
func (r *leaseRegistry) holds(sub string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bySub[sub] > 0
}

// all lists the leases held.
func (r *leaseRegistry) all() []store.JobLease {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]store.JobLease, 0, len(r.byJob))
	for id, h := range r.byJob {
		out = append(out, store.JobLease{JobID: id, LeaseToken: h.token})
	}
	return out
}

// clear forgets every lease: the process was taken over.
func (r *leaseRegistry) clear() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.byJob)
	clear(r.bySub)
}

// held reports whether job id is held here under token.
func (r *leaseRegistry) held(id, token string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, ok := r.byJob[id]
	return ok && h.token == token
}

// A lease's timing (docs/delivery.md, "Crashes"): the jobs this process
// claims or is born are its own while its heartbeat is fresh (heart). Each
// also carries its own lease end, a heartbeat's lapse after it was taken:
// what ends a job whose process has no heartbeat row (stopped cleanly with
// a give-back that failed, or a process of a version before heartbeats).

// heldLease is how far ahead a claim or a birth sets a job's own lease end.
func (d *Dispatcher) heldLease() time.Duration { return d.heart.lapse }
