package dispatch

import (
	"context"
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

// renewLoop renews the leases held here every sixth of a lease
// (renewEvery), so a slow attempt (or a run, or a result not yet written)
// never loses its lease while this process lives; only a process that
// died, or lost the database for most of a lease, lets its leases expire.
func (d *Dispatcher) renewLoop(stop <-chan struct{}) {
	t := time.NewTicker(d.renewEvery())
	defer t.Stop()
	failed := 0 // renewals failed in a row
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			// A renewal may take two periods: the leases it renews still
			// have two thirds of a lease to run (heldLease).
			ctx, cancel := context.WithTimeout(context.Background(), max(2*d.renewEvery(), 2*time.Second))
			err := d.RenewLeases(ctx)
			cancel()
			if err == nil {
				failed = 0
				continue
			}
			d.storeFailed()
			// One slow round on a loaded database is retried at the next
			// tick; leases at risk (a third of their margin gone) are an
			// error.
			if failed++; failed < 2 {
				d.cfg.Logger.Warn("renewing leases failed; retrying at the next round", "err", err)
			} else {
				d.cfg.Logger.Error("renewing leases keeps failing; the leases held here expire if it goes on", "rounds", failed,
					"lease_margin_left", max(d.heldLease()-time.Duration(failed)*d.renewEvery(), 0), "err", err)
			}
		}
	}
}

// RenewLeases renews, once, every lease held here (Run does it every
// renewEvery). Leases found lost (recovered meanwhile by another process)
// stop being renewed: the results of their attempts will be fenced.
func (d *Dispatcher) RenewLeases(ctx context.Context) error {
	held := d.leases.all()
	for start := 0; start < len(held); start += 1000 {
		chunk := held[start:min(start+1000, len(held))]
		lost, err := d.cfg.Store.RenewLeases(ctx, store.RenewParams{Leases: chunk, Lease: d.heldLease()})
		if err != nil {
			return err
		}
		if len(lost) > 0 {
			d.cfg.Logger.Debug("leases no longer held: written meanwhile, or recovered by another process (then their results are fenced)", "jobs", len(lost))
			byID := make(map[string]string, len(chunk))
			for _, l := range chunk {
				byID[l.JobID] = l.LeaseToken
			}
			var gone []store.JobLease
			for _, id := range lost {
				gone = append(gone, store.JobLease{JobID: id, LeaseToken: byID[id]})
			}
			d.leases.forget(gone...)
		}
	}
	return nil
}

// A lease's timing (docs/concepts.md, "Leases and crashes"). Leases are
// renewed every sixth of STREAMING_HUB_DISPATCH_LEASE and each claim or
// renewal sets the lease's end a lease less one renewal period ahead
// (25 s of 30 at the defaults): a process that died lets its jobs go at
// most that long after its last renewal, and the other replicas look for
// expired leases every thirtieth of a lease (1 s), so a crash pauses a
// subscription for about 26 s, well within a lease plus one maintenance
// pass. A live process whose renewals fail keeps its leases for at least
// two thirds of a lease (20 s) after its last renewal went through.

// renewEvery is how often the leases held here are renewed.
func (d *Dispatcher) renewEvery() time.Duration { return max(d.cfg.Lease/6, 10*time.Millisecond) }

// heldLease is how far ahead a claim or a renewal sets a lease's end.
func (d *Dispatcher) heldLease() time.Duration {
	return max(d.cfg.Lease-d.renewEvery(), d.renewEvery())
}

// recoverEvery is how often expired leases are looked for.
func (d *Dispatcher) recoverEvery() time.Duration {
	return min(d.cfg.MaintenanceInterval, max(d.cfg.Lease/30, 100*time.Millisecond))
}
