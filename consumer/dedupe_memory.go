package consumer

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// DefaultMaxEntries bounds a MemoryDeduper when MemoryOptions.MaxEntries is
// not set: about 100 bytes plus the key per entry.
const DefaultMaxEntries = 100_000

// MemoryOptions configure a MemoryDeduper. Zero values mean the defaults.
type MemoryOptions struct {
	MaxEntries int              // entries kept; beyond it the oldest written go first (DefaultMaxEntries)
	TTL        time.Duration    // how long a processed key is remembered (DefaultDedupeTTL)
	Lease      time.Duration    // how long a claim lives without Commit/Release (DefaultLease)
	Now        func() time.Time // the clock, for tests (time.Now)
}

// MemoryDeduper is a Deduper in the process's memory: for a receiver that
// runs as a single instance and accepts that a restart forgets what was
// processed. Several instances behind a load balancer need a shared store:
// see consumer/redisdedupe.
//
// It is bounded: past MaxEntries it evicts the least recently written keys,
// which may let an old event through again; size it above the number of
// events the receiver gets within TTL. It is safe for concurrent use.
type MemoryDeduper struct {
	max        int
	ttl, lease time.Duration
	now        func() time.Time

	mu      sync.Mutex
	entries map[string]*list.Element // of *memEntry
	order   *list.List               // oldest written first
}

type memEntry struct {
	key     string
	token   string // of the claim; "" once processed
	done    bool
	expires time.Time
}

// NewMemoryDeduper returns an empty MemoryDeduper.
func NewMemoryDeduper(o MemoryOptions) *MemoryDeduper {
	d := &MemoryDeduper{max: o.MaxEntries, ttl: o.TTL, lease: o.Lease, now: o.Now,
		entries: make(map[string]*list.Element), order: list.New()}
	if d.max <= 0 {
		d.max = DefaultMaxEntries
	}
	if d.ttl <= 0 {
		d.ttl = DefaultDedupeTTL
	}
	if d.lease <= 0 {
		d.lease = DefaultLease
	}
	if d.now == nil {
		d.now = time.Now
	}
	return d
}

// Claim implements Deduper.
func (d *MemoryDeduper) Claim(_ context.Context, key string) (Claim, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	d.dropExpired(now)
	if el, ok := d.entries[key]; ok {
		e := el.Value.(*memEntry)
		switch {
		case !now.Before(e.expires):
			d.remove(el)
		case e.done:
			return Claim{Key: key, State: Processed}, nil
		default:
			return Claim{Key: key, State: InProgress}, nil
		}
	}
	c := Claim{Key: key, State: Claimed, Token: newToken()}
	d.put(&memEntry{key: key, token: c.Token, expires: now.Add(d.lease)})
	return c, nil
}

// Commit implements Deduper. It marks the key processed even when the
// claim's lease expired or the entry was evicted meanwhile: the event was
// processed all the same.
func (d *MemoryDeduper) Commit(_ context.Context, c Claim) error {
	if c.State != Claimed {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if el, ok := d.entries[c.Key]; ok {
		d.remove(el)
	}
	d.put(&memEntry{key: c.Key, done: true, expires: d.now().Add(d.ttl)})
	return nil
}

// Release implements Deduper. It removes the key only while it still holds
// this claim: not a later claim of another delivery, nor a commit.
func (d *MemoryDeduper) Release(_ context.Context, c Claim) error {
	if c.State != Claimed {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if el, ok := d.entries[c.Key]; ok {
		if e := el.Value.(*memEntry); !e.done && e.token == c.Token {
			d.remove(el)
		}
	}
	return nil
}

// Len returns the number of keys held, expired ones included until they
// are dropped.
func (d *MemoryDeduper) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.entries)
}

// put adds e as the newest entry and evicts the oldest beyond the bound.
func (d *MemoryDeduper) put(e *memEntry) {
	d.entries[e.key] = d.order.PushBack(e)
	for d.order.Len() > d.max {
		d.remove(d.order.Front())
	}
}

// dropExpired removes expired entries from the old end, stopping at the
// first live one: amortized O(1) per call, and enough to keep a quiet
// deduper from holding dead keys. Expired entries further in are dropped
// when they are looked up or reach the old end.
func (d *MemoryDeduper) dropExpired(now time.Time) {
	for el := d.order.Front(); el != nil; el = d.order.Front() {
		if now.Before(el.Value.(*memEntry).expires) {
			return
		}
		d.remove(el)
	}
}

func (d *MemoryDeduper) remove(el *list.Element) {
	delete(d.entries, el.Value.(*memEntry).key)
	d.order.Remove(el)
}
