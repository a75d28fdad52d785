package concurrency

import (
	"slices"
	"sync"
	"time"
)

const (
	// idleAfter is how long a host with nothing in flight is kept after
	// its last use: a host that comes back later starts again at 1.
	idleAfter = 10 * time.Minute
	// maxHosts bounds the hosts kept with nothing in flight; past it, the
	// longest unused quarter is forgotten. Hosts with attempts in flight
	// are never forgotten (their number is bounded by the attempts).
	maxHosts = 4096
)

// Hosts is the limiters of the destination hosts this process sends to,
// keyed by destination (scheme://host:port), created on first use and
// forgotten when idle. It is safe for concurrent use.
type Hosts struct {
	now      func() time.Time
	onChange func(Change)
	initial  int // a new limiter's limit (at most its ceiling); 1 unless set

	mu     sync.RWMutex
	m      map[string]*Limiter
	pruned time.Time
}

// NewHosts returns an empty set of limiters on the clock now. onChange,
// if not nil, is called (outside any lock) after each change of a host's
// limit: the debug log line of limit changes.
func NewHosts(now func() time.Time, onChange func(Change)) *Hosts {
	return &Hosts{now: now, onChange: onChange, m: make(map[string]*Limiter), pruned: now()}
}

// SetInitial makes new limiters start at n (at most their ceiling)
// rather than 1: a host first seen with a burst does not take it one
// attempt at a time while its first windows measure it. It applies to the
// limiters made from now on.
func (h *Hosts) SetInitial(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.initial = n
}

// Get returns host's limiter, creating it at limit 1 if it is not kept,
// and sets its ceiling: the smaller of the per-destination setting and the
// sum of the host's subscriptions' max_in_flight, as the caller knows it
// now.
func (h *Hosts) Get(host string, ceiling int) *Limiter {
	now := h.now()
	h.mu.RLock()
	l := h.m[host]
	due := now.Sub(h.pruned) >= idleAfter
	h.mu.RUnlock()
	if l == nil || due {
		h.mu.Lock()
		if now.Sub(h.pruned) >= idleAfter || len(h.m) >= maxHosts {
			h.prune(now)
		}
		if l = h.m[host]; l == nil {
			l = NewLimiter(ceiling, h.now)
			if h.initial > 1 {
				l.limit, l.initial = min(h.initial, l.ceiling), h.initial
			}
			l.host, l.onChange = host, h.onChange
			h.m[host] = l
		}
		h.mu.Unlock()
	}
	l.mu.Lock()
	l.lastUsed = now
	var c Change
	if l.ceiling != ceiling {
		c = l.setCeiling(ceiling, now)
	}
	l.mu.Unlock()
	if c.From != c.To && h.onChange != nil {
		h.onChange(c)
	}
	return l
}

// Snapshot returns host's limiter's state, and false if none is kept (the
// host has not been sent to lately): for display, it creates nothing.
func (h *Hosts) Snapshot(host string) (Snapshot, bool) {
	h.mu.RLock()
	l := h.m[host]
	h.mu.RUnlock()
	if l == nil {
		return Snapshot{}, false
	}
	return l.Snapshot(), true
}

// Len is the number of hosts kept.
func (h *Hosts) Len() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.m)
}

// prune forgets the hosts idle since idleAfter and, if as many as maxHosts
// are still kept, the longest unused quarter of those with nothing in
// flight; h.mu is held.
func (h *Hosts) prune(now time.Time) {
	h.pruned = now
	type idle struct {
		host string
		used time.Time
	}
	var spare []idle
	for host, l := range h.m {
		l.mu.Lock()
		free, used := l.inFlight == 0, l.lastUsed
		l.mu.Unlock()
		switch {
		case free && now.Sub(used) >= idleAfter:
			delete(h.m, host)
		case free && len(h.m) >= maxHosts:
			spare = append(spare, idle{host, used})
		}
	}
	if len(h.m) < maxHosts {
		return
	}
	slices.SortFunc(spare, func(a, b idle) int { return a.used.Compare(b.used) })
	for _, s := range spare[:min(len(spare), max(1, maxHosts/4))] {
		delete(h.m, s.host)
	}
}
