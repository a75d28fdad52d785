package dispatch

import (
	"net/url"
	"strings"
	"sync"
	"time"
)

// activeFor is how long a tenant that asked for a destination counts among
// the tenants sharing it after its last attempt there ended.
const activeFor = 10 * time.Second

// destinations counts the attempts in flight to each destination (scheme,
// host and port). A destination holds at most its share of the in-flight
// set, divided fairly among the tenants sending there (docs/performance.md):
// with n tenants active at a destination, each is owed share/n attempts (at
// least one). A tenant takes more than its fair share only from room no other
// active tenant is owed, and a tenant under its fair share is admitted even
// when others' borrowed attempts fill the share (up to twice the share, the
// hard ceiling). So one tenant's hung attempts never take another tenant's
// room on a shared host: they hold at most what they borrowed, and only until
// the delivery timeout. The subscriptions of tenants refused at a destination
// are remembered: claims leave them alone until their tenant has room there
// again.
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
	// parked are the units refused here, waiting for room, by tenant in
	// the order tenants were first refused (ring turns round-robin).
	parked map[string][]unit
	ring   []string
	turn   int
	pruned time.Time
}

// tenantShare is one tenant's attempts at one destination.
type tenantShare struct {
	count int
	last  time.Time       // its last admission, refusal or attempt's end
	subs  map[string]bool // its subscriptions seen sending here
}

// parkedUnit is a unit refused at its destination that may start now.
type parkedUnit struct {
	u            unit
	dest, tenant string
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
		if t.count == 0 && h.waiting[id] == nil && len(h.parked[id]) == 0 && now.Sub(t.last) >= activeFor {
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
			waiting: make(map[string]*tenantShare), parked: make(map[string][]unit), pruned: now}
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
	// A tenant with work parked here waits behind it: its units start in
	// the order they came.
	if len(h.parked[tenant]) > 0 || !h.canAdmit(t, ds.share) {
		h.waiting[tenant] = t
		return false
	}
	t.count++
	h.total++
	h.busy[tenant] = t
	return true
}

// park holds a unit admit refused, at its destination, until room comes
// (leave starts it): it stays this process's, with no database write, and
// the tenant's subscriptions are left alone by claims meanwhile.
func (ds *destinations) park(dest, tenant string, u unit) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	h := ds.hosts[dest]
	if h == nil { // it was admitted nowhere: cannot be, but never lose it
		h = &host{tenants: make(map[string]*tenantShare), busy: make(map[string]*tenantShare),
			waiting: make(map[string]*tenantShare), parked: make(map[string][]unit), pruned: ds.now()}
		ds.hosts[dest] = h
	}
	if len(h.parked[tenant]) == 0 {
		h.ring = append(h.ring, tenant)
	}
	h.parked[tenant] = append(h.parked[tenant], u)
	if t := h.tenants[tenant]; t != nil {
		h.waiting[tenant] = t
	}
}

// repark puts back a unit startParked took but that will not start (the
// process stops): its slot is given back and it waits first in line.
func (ds *destinations) repark(p parkedUnit) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	h := ds.hosts[p.dest]
	if h == nil {
		h = &host{tenants: make(map[string]*tenantShare), busy: make(map[string]*tenantShare),
			waiting: make(map[string]*tenantShare), parked: make(map[string][]unit), pruned: ds.now()}
		ds.hosts[p.dest] = h
	}
	if t := h.tenants[p.tenant]; t != nil && t.count > 0 {
		t.count--
		h.total--
		if t.count == 0 {
			delete(h.busy, p.tenant)
		}
	}
	if len(h.parked[p.tenant]) == 0 {
		h.ring = append(h.ring, p.tenant)
	}
	h.parked[p.tenant] = append([]unit{p.u}, h.parked[p.tenant]...)
}

// unpark takes every parked unit (the process stops, or was taken over).
func (ds *destinations) unpark() []unit {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	var out []unit
	for _, h := range ds.hosts {
		for _, tenant := range h.ring {
			out = append(out, h.parked[tenant]...)
		}
		clear(h.parked)
		h.ring, h.turn = nil, 0
	}
	return out
}

// startParked admits, round-robin over the tenants with work parked at
// h, the units that now fit: their slots are taken.
func (h *host) startParked(dest string, share int, now time.Time) (start []parkedUnit) {
	for len(h.ring) > 0 {
		progressed := false
		for range len(h.ring) {
			h.turn %= len(h.ring)
			tenant := h.ring[h.turn]
			t := h.tenants[tenant]
			if t == nil {
				t = &tenantShare{subs: make(map[string]bool)}
				h.tenants[tenant] = t
			}
			if !h.canAdmit(t, share) {
				h.turn++
				continue
			}
			u := h.parked[tenant][0]
			if h.parked[tenant] = h.parked[tenant][1:]; len(h.parked[tenant]) == 0 {
				delete(h.parked, tenant)
				h.ring = append(h.ring[:h.turn], h.ring[h.turn+1:]...)
			} else {
				h.turn++
			}
			t.count++
			t.last = now
			h.total++
			h.busy[tenant] = t
			start = append(start, parkedUnit{u: u, dest: dest, tenant: tenant})
			progressed = true
			break
		}
		if !progressed {
			return start
		}
	}
	return start
}

// leave gives back one of tenant's slots at dest; it returns the units
// parked there that now start (their slots taken), and the subscriptions
// of the refused tenants that now have room there and nothing parked.
func (ds *destinations) leave(dest, tenant string) (start []parkedUnit, freed []string) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	now := ds.now()
	h := ds.hosts[dest]
	if h == nil {
		return nil, nil
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
	start = h.startParked(dest, ds.share, now)
	for id, t := range h.waiting {
		if len(h.parked[id]) == 0 && h.canAdmit(t, ds.share) {
			for sub := range t.subs {
				freed = append(freed, sub)
			}
			delete(h.waiting, id)
		}
	}
	if h.total == 0 && len(h.waiting) == 0 && len(h.tenants) == 0 && len(h.ring) == 0 {
		delete(ds.hosts, dest)
	}
	return start, freed
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
		if h.total == 0 && len(h.waiting) == 0 && len(h.tenants) == 0 && len(h.ring) == 0 {
			delete(ds.hosts, dest)
			continue
		}
		candidates := h.busy // under the ceiling, a tenant with nothing in flight has room
		if h.total >= 2*ds.share {
			candidates = h.tenants
		}
		for id, t := range candidates {
			if len(h.parked[id]) > 0 || !h.canAdmit(t, ds.share) {
				h.waiting[id] = t
				for sub := range t.subs {
					out = append(out, sub)
				}
			}
		}
		// A tenant with work parked here gets no more until it started.
		for id := range h.parked {
			if t := h.tenants[id]; t != nil && candidates[id] == nil {
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
	if strings.HasPrefix(raw, "kafka://") || strings.HasPrefix(raw, "pubsub://") || strings.HasPrefix(raw, "arn:") || strings.HasPrefix(raw, "aws_sqs:") {
		return raw // hub.Destination.Address: the brokers, the project or the AWS resource, already plain
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
