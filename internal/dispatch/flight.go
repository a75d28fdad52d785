package dispatch

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// activeFor is how long a tenant that asked for a destination counts among
// the tenants sharing it after its last attempt there ended.
const activeFor = 10 * time.Second

// destinations counts the attempts in flight to each destination (scheme,
// host and port). A destination holds at most its share of the in-flight
// set, divided fairly among the tenants sending there (SPEC 25): with n
// tenants active at a destination, each is owed share/n attempts (at least
// one). A tenant takes more than its fair share only from room no other
// active tenant is owed, and a tenant under its fair share is admitted
// even when others' borrowed attempts fill the share (up to twice the
// share, the hard ceiling). So one tenant's hung attempts never take
// another tenant's room on a shared host: they hold at most what they
// borrowed, and only until the delivery timeout. The subscriptions of
// tenants refused at a destination are remembered: claims leave them alone
// until their tenant has room there again.
type destinations struct {
	share int
	now   func() time.Time

	mu    sync.Mutex
	hosts map[string]*host
}

// host is one destination's attempts, by tenant.
type host struct {
	total   int
	tenants map[string]*tenantShare // tenants active here
	busy    map[string]*tenantShare // those with attempts in flight
	waiting map[string]*tenantShare // those refused and not yet freed
	pruned  time.Time
}

// tenantShare is one tenant's attempts at one destination.
type tenantShare struct {
	count int
	last  time.Time       // its last admission, refusal or attempt's end
	subs  map[string]bool // its subscriptions seen sending here
}

func newDestinations(share int, now func() time.Time) destinations {
	return destinations{share: share, now: now, hosts: make(map[string]*host)}
}

// fair is each active tenant's share of the destination.
func (h *host) fair(share int) int { return max(1, share/max(len(h.tenants), 1)) }

// spare is the room of the share that is neither held nor owed to an
// active tenant under its fair share.
func (h *host) spare(share int) int {
	fair := h.fair(share)
	held := 0 // attempts counted toward fair shares
	for _, t := range h.busy {
		held += min(t.count, fair)
	}
	owed := len(h.tenants)*fair - held
	return share - h.total - owed
}

// canAdmit says whether t may start one more attempt here.
func (h *host) canAdmit(t *tenantShare, share int) bool {
	switch {
	case h.total >= 2*share:
		return false
	case t.count < h.fair(share):
		return true
	}
	return h.total < share && h.spare(share) > 0
}

// prune forgets tenants idle here for activeFor (at most once a second),
// so the fair share grows back as tenants leave.
func (h *host) prune(now time.Time) {
	if now.Sub(h.pruned) < time.Second {
		return
	}
	h.pruned = now
	for id, t := range h.tenants {
		if t.count == 0 && h.waiting[id] == nil && now.Sub(t.last) >= activeFor {
			delete(h.tenants, id)
		}
	}
}

// admit takes one of dest's slots for tenant's subscription sub, unless
// the tenant has no room there.
func (ds *destinations) admit(dest, tenant, sub string) bool {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	now := ds.now()
	h := ds.hosts[dest]
	if h == nil {
		h = &host{tenants: make(map[string]*tenantShare), busy: make(map[string]*tenantShare),
			waiting: make(map[string]*tenantShare), pruned: now}
		ds.hosts[dest] = h
	}
	h.prune(now)
	t := h.tenants[tenant]
	if t == nil {
		t = &tenantShare{subs: make(map[string]bool)}
		h.tenants[tenant] = t
	}
	t.last = now
	t.subs[sub] = true
	if !h.canAdmit(t, ds.share) {
		h.waiting[tenant] = t
		return false
	}
	t.count++
	h.total++
	h.busy[tenant] = t
	return true
}

// leave gives back one of tenant's slots at dest; it returns the
// subscriptions of the refused tenants that now have room there.
func (ds *destinations) leave(dest, tenant string) (freed []string) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	now := ds.now()
	h := ds.hosts[dest]
	if h == nil {
		return nil
	}
	if t := h.tenants[tenant]; t != nil && t.count > 0 {
		t.count--
		h.total--
		t.last = now
		if t.count == 0 {
			delete(h.busy, tenant)
		}
	}
	h.prune(now)
	for id, t := range h.waiting {
		if h.canAdmit(t, ds.share) {
			for sub := range t.subs {
				freed = append(freed, sub)
			}
			delete(h.waiting, id)
		}
	}
	if h.total == 0 && len(h.waiting) == 0 && len(h.tenants) == 0 {
		delete(ds.hosts, dest)
	}
	return freed
}

// excluded lists the subscriptions of tenants with no room at a
// destination they send to.
func (ds *destinations) excluded() []string {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	now := ds.now()
	var out []string
	for dest, h := range ds.hosts {
		h.prune(now)
		if h.total == 0 && len(h.waiting) == 0 && len(h.tenants) == 0 {
			delete(ds.hosts, dest)
			continue
		}
		candidates := h.busy // under the ceiling, a tenant with nothing in flight has room
		if h.total >= 2*ds.share {
			candidates = h.tenants
		}
		for id, t := range candidates {
			if !h.canAdmit(t, ds.share) {
				h.waiting[id] = t
				for sub := range t.subs {
					out = append(out, sub)
				}
			}
		}
	}
	return out
}

// destinationOf is a URL's destination: scheme, host and port (the
// scheme's default when none is written).
func destinationOf(raw string) string {
	if strings.HasPrefix(raw, "kafka://") || strings.HasPrefix(raw, "pubsub://") {
		return raw // hub.Destination.Address: the brokers or the project, already plain
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "http":
			port = "80"
		case "amqps":
			port = "5671"
		case "amqp":
			port = "5672"
		case "nats", "tls":
			port = "4222"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// hold registers leases to renew; forget ends their renewal.
func (d *Dispatcher) hold(leases []store.JobLease) {
	d.leaseMu.Lock()
	defer d.leaseMu.Unlock()
	for _, l := range leases {
		d.leases[l.JobID] = l.LeaseToken
	}
}

func (d *Dispatcher) forget(leases ...store.JobLease) {
	d.leaseMu.Lock()
	defer d.leaseMu.Unlock()
	for _, l := range leases {
		if d.leases[l.JobID] == l.LeaseToken {
			delete(d.leases, l.JobID)
		}
	}
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
	d.leaseMu.Lock()
	held := make([]store.JobLease, 0, len(d.leases))
	for id, token := range d.leases {
		held = append(held, store.JobLease{JobID: id, LeaseToken: token})
	}
	d.leaseMu.Unlock()
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
			d.forget(gone...)
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
