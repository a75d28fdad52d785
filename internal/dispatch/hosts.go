package dispatch

import (
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/dispatch/concurrency"
)

// initialLimit is where a host's limit starts: a first burst to a new
// host goes out a few at a time at once, and the limit moves from there
// (receivers that answer at once use few of them: the limit grows only
// with demand, and a host with little to send never fills it).
const initialLimit = 8

// activeFor is how long a tenant that asked for a destination counts among
// the tenants sharing it after its last attempt there ended.
const activeFor = 10 * time.Second

// hosts is the gate every unit of work passes before its attempt: it
// counts the attempts in flight to each receiver host (a destination's
// scheme, host and port) and admits a unit only within the host's share.
// The share is the host's adaptive limit (internal/dispatch/concurrency,
// docs/delivery.md "Concurrency that follows the receiver"), which follows
// the receiver's answers between 1 and the smaller of
// STREAMING_HUB_DISPATCH_MAX_PER_DESTINATION and the sum of the
// max_in_flight of the subscriptions sending there. The share is divided
// fairly among the tenants sending there (docs/performance.md, "One
// receiver host"): with n tenants active at a host, each is owed share/n
// attempts (at least one). A tenant takes more than its fair share only
// from room no other active tenant is owed, and a tenant under its fair
// share is admitted even when others' borrowed attempts fill the share (up
// to twice the share, the hard ceiling). So one tenant's hung attempts
// never take another tenant's room on a shared host: they hold at most
// what they borrowed, and only until the delivery timeout. What a tenant
// cannot send yet is parked here, in order, and starts when an attempt
// there ends; claims leave its subscriptions alone meanwhile.
type hosts struct {
	maxPer int // every host's ceiling: MaxPerDestination
	fixed  int // tests of the fair share: every host's limit, not adaptive
	now    func() time.Time
	limits *concurrency.Hosts

	mu sync.Mutex
	m  map[string]*host
}

// host is one destination's attempts, by tenant.
type host struct {
	lim     *concurrency.Limiter
	fixed   int
	subMax  map[string]int // max_in_flight of its subscriptions: the ceiling's sum
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

func newHosts(maxPer int, now func() time.Time, onChange func(concurrency.Change)) *hosts {
	// The limits follow answers as they come, on the process's own clock:
	// latency is measured on it, never on the dispatcher's (a test's clock
	// that stands still would stop every window).
	limits := concurrency.NewHosts(time.Now, onChange)
	limits.SetInitial(initialLimit)
	return &hosts{maxPer: maxPer, now: now, limits: limits, m: make(map[string]*host)}
}

// newHost is a host with nothing in flight, its limit's ceiling ceiling
// until its subscriptions say more.
func (ds *hosts) newHost(dest string, now time.Time, ceiling int) *host {
	h := &host{tenants: make(map[string]*tenantShare), busy: make(map[string]*tenantShare),
		waiting: make(map[string]*tenantShare), parked: make(map[string][]unit), subMax: make(map[string]int), pruned: now}
	h.lim, h.fixed = ds.limits.Get(dest, max(1, min(ceiling, ds.maxPer))), ds.fixed
	ds.m[dest] = h
	return h
}

// limit is the host's share: its adaptive limit.
func (h *host) limit() int {
	if h.fixed > 0 {
		return h.fixed
	}
	return h.lim.Limit()
}

// ceiling is the bound of the host's limit: the smaller of maxPer and its
// subscriptions' max_in_flight summed.
func (h *host) ceiling(maxPer int) int {
	sum := 0
	for _, n := range h.subMax {
		if sum += n; sum >= maxPer {
			return maxPer
		}
	}
	return max(1, sum)
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
// so the fair share grows back as tenants leave, and their subscriptions
// leave the ceiling's sum.
func (h *host) prune(now time.Time) {
	if now.Sub(h.pruned) < time.Second {
		return
	}
	h.pruned = now
	for id, t := range h.tenants {
		if t.count == 0 && h.waiting[id] == nil && len(h.parked[id]) == 0 && now.Sub(t.last) >= activeFor {
			delete(h.tenants, id)
			for sub := range t.subs {
				delete(h.subMax, sub)
			}
		}
	}
}

// admit takes one of dest's slots for tenant's subscription sub (of
// max_in_flight maxInFlight), unless the tenant has no room there.
func (ds *hosts) admit(dest, tenant, sub string, maxInFlight int) bool {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	now := ds.now()
	h := ds.m[dest]
	if h == nil {
		h = ds.newHost(dest, now, maxInFlight)
	}
	h.prune(now)
	h.subMax[sub] = maxInFlight
	h.lim = ds.limits.Get(dest, h.ceiling(ds.maxPer)) // marks it used; a limiter forgotten while idle comes back
	t := h.tenants[tenant]
	if t == nil {
		t = &tenantShare{subs: make(map[string]bool)}
		h.tenants[tenant] = t
	}
	t.last = now
	t.subs[sub] = true
	// A tenant with work parked here waits behind it: its units start in
	// the order they came.
	if len(h.parked[tenant]) > 0 || !h.canAdmit(t, h.limit()) {
		h.waiting[tenant] = t
		return false
	}
	t.count++
	h.total++
	h.busy[tenant] = t
	h.lim.Acquire()
	return true
}

// park holds a unit admit refused, at its destination, until room comes
// (leave starts it): it stays this process's, with no database write, and
// the tenant's subscriptions are left alone by claims meanwhile.
func (ds *hosts) park(dest, tenant string, u unit) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	h := ds.m[dest]
	if h == nil { // it was admitted nowhere: cannot be, but never lose it
		h = ds.newHost(dest, ds.now(), ds.maxPer)
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
func (ds *hosts) repark(p parkedUnit) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	h := ds.m[p.dest]
	if h == nil {
		h = ds.newHost(p.dest, ds.now(), ds.maxPer)
	}
	if t := h.tenants[p.tenant]; t != nil && t.count > 0 {
		t.count--
		h.total--
		h.lim.Release(concurrency.Ignore, 0)
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
func (ds *hosts) unpark() []unit {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	var out []unit
	for _, h := range ds.m {
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
			h.lim.Acquire()
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

// observe tells dest's limit what one attempt of a run said, the run
// keeping its slot for its next attempt. An answer may have raised the
// limit: like leave, it returns the units parked there that now start
// (their slots taken) and the subscriptions of refused tenants that now
// have room there. Without it, work parked behind runs (an ordered
// subscription's jobs, attempted one after the other under one slot)
// waited for a whole run to end, however much the limit grew meanwhile.
func (ds *hosts) observe(dest string, o concurrency.Outcome, rtt time.Duration) (start []parkedUnit, freed []string) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	h := ds.m[dest]
	if h == nil {
		return nil, nil
	}
	h.lim.Release(o, rtt)
	h.lim.Acquire()
	return h.roomMade(dest, ds.now())
}

// leave gives back one of tenant's slots at dest, with what its last
// attempt said (its outcome and latency move the host's limit); it returns
// the units parked there that now start (their slots taken), and the
// subscriptions of the refused tenants that now have room there and
// nothing parked.
func (ds *hosts) leave(dest, tenant string, o concurrency.Outcome, rtt time.Duration) (start []parkedUnit, freed []string) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	now := ds.now()
	h := ds.m[dest]
	if h == nil {
		return nil, nil
	}
	if t := h.tenants[tenant]; t != nil && t.count > 0 {
		t.count--
		h.total--
		h.lim.Release(o, rtt)
		t.last = now
		if t.count == 0 {
			delete(h.busy, tenant)
		}
	}
	start, freed = h.roomMade(dest, now)
	if h.total == 0 && len(h.waiting) == 0 && len(h.tenants) == 0 && len(h.ring) == 0 {
		delete(ds.m, dest)
	}
	return start, freed
}

// roomMade starts the parked units that fit now and frees the refused
// tenants with room and nothing parked: an attempt ended, or a limit grew.
func (h *host) roomMade(dest string, now time.Time) (start []parkedUnit, freed []string) {
	h.prune(now)
	start = h.startParked(dest, h.limit(), now)
	for id, t := range h.waiting {
		if len(h.parked[id]) == 0 && h.canAdmit(t, h.limit()) {
			for sub := range t.subs {
				freed = append(freed, sub)
			}
			delete(h.waiting, id)
		}
	}
	return start, freed
}

// excluded lists the subscriptions of tenants with no room at a
// destination they send to.
func (ds *hosts) excluded() []string {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	now := ds.now()
	var out []string
	for dest, h := range ds.m {
		h.prune(now)
		if h.total == 0 && len(h.waiting) == 0 && len(h.tenants) == 0 && len(h.ring) == 0 {
			delete(ds.m, dest)
			continue
		}
		share := h.limit()
		candidates := h.busy // under the ceiling, a tenant with nothing in flight has room
		if h.total >= 2*share {
			candidates = h.tenants
		}
		for id, t := range candidates {
			if len(h.parked[id]) > 0 || !h.canAdmit(t, share) {
				h.waiting[id] = t
				out = h.unordered(t, out)
			}
		}
		// A tenant with work parked here gets no more until it started.
		for id := range h.parked {
			if t := h.tenants[id]; t != nil && candidates[id] == nil {
				out = h.unordered(t, out)
			}
		}
	}
	return out
}

// unordered appends t's unordered subscriptions here to out. An ordered
// subscription (max_in_flight 1) is never left alone: its new jobs join
// the run it has here, which holds one slot for all of them, or wait as
// one parked unit.
func (h *host) unordered(t *tenantShare, out []string) []string {
	for sub := range t.subs {
		if h.subMax[sub] > 1 {
			out = append(out, sub)
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

// HostLimit is what a subscription's health answer shows of its receiver
// host in this process (docs/delivery.md, "Concurrency that follows the
// receiver"): the current limit on attempts in flight there, how many are,
// and the host's recent and best latency; ok is false when this process
// has not sent there lately.
type HostLimit struct {
	Limit, InFlight, Ceiling   int
	RecentLatency, BestLatency time.Duration
}

// snapshot reads dest's limit.
func (ds *hosts) snapshot(dest string) (HostLimit, bool) {
	s, ok := ds.limits.Snapshot(dest)
	if !ok {
		return HostLimit{}, false
	}
	return HostLimit{Limit: s.Limit, InFlight: s.InFlight, Ceiling: s.Ceiling, RecentLatency: s.RecentLatency,
		BestLatency: s.BestLatency}, true
}
