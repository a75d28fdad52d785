package destination

import (
	"errors"
	"sync"
	"time"
)

// ErrClosed is what a send gets from a pool that was closed.
var ErrClosed = errors.New("closed")

// IdleAfter is how long a broker connection goes unused before it is
// closed: a destination deleted, moved to other brokers or given a new
// password leaves its old connection behind, and a hub that runs for
// months must not keep every one it ever opened.
const IdleAfter = 10 * time.Minute

// Pool keeps a driver's connections by key (the destination with its
// credentials), counts the sends using each, and closes those unused for
// IdleAfter with no send in flight; it sweeps at most once a minute, on
// its way to a send. A connection that failed in a way a new one could
// cure is discarded: the next send dials again. V is the connection;
// close closes one.
type Pool[V comparable] struct {
	now   func() time.Time
	close func(V)

	mu     sync.Mutex
	conns  map[string]*pooled[V]
	swept  time.Time
	closed bool
}

type pooled[V comparable] struct {
	v         V
	used      time.Time
	inFlight  int
	discarded bool // out of the pool: closed once inFlight is 0
}

// NewPool returns an empty pool whose connections close with close.
func NewPool[V comparable](now func() time.Time, close func(V)) *Pool[V] {
	if now == nil {
		now = time.Now
	}
	return &Pool[V]{now: now, close: close, conns: make(map[string]*pooled[V])}
}

// Acquire returns key's connection, opening it with open when there is
// none, for one send; release must be called when the send is over. It
// fails once the pool is closed.
func (p *Pool[V]) Acquire(key string, open func() (V, error)) (v V, release func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return v, nil, ErrClosed
	}
	now := p.now()
	p.sweep(now)
	c := p.conns[key]
	if c == nil {
		if v, err = open(); err != nil {
			return v, nil, err
		}
		c = &pooled[V]{v: v}
		p.conns[key] = c
	}
	c.used = now
	c.inFlight++
	return c.v, func() {
		p.mu.Lock()
		c.inFlight--
		c.used = p.now()
		last := c.discarded && c.inFlight == 0
		p.mu.Unlock()
		if last {
			go p.close(c.v)
		}
	}, nil
}

// Discard takes v, key's connection, out of the pool when it failed in a
// way a new connection could cure (the broker's cluster replaced, a
// closed channel, a client that stopped answering): the next Acquire of
// key opens a new one, and v is closed once the sends in flight on it are
// over, so none of them is cut short. It reports whether v was still
// key's connection: a discard by another send, or by the idle sweep,
// comes first.
func (p *Pool[V]) Discard(key string, v V) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.conns[key]
	if c == nil || c.v != v {
		return false
	}
	delete(p.conns, key)
	c.discarded = true
	if c.inFlight == 0 {
		go p.close(c.v)
	}
	return true
}

// sweep closes the idle connections, at most once a minute; p.mu is held.
func (p *Pool[V]) sweep(now time.Time) {
	if now.Sub(p.swept) < time.Minute {
		return
	}
	p.swept = now
	for key, c := range p.conns {
		if c.inFlight == 0 && now.Sub(c.used) >= IdleAfter {
			delete(p.conns, key)
			go p.close(c.v) // a broker that does not answer must not hold the pool
		}
	}
}

// Len is how many connections the pool holds.
func (p *Pool[V]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close closes every connection; later Acquires fail.
func (p *Pool[V]) Close() {
	p.mu.Lock()
	conns := p.conns
	p.conns, p.closed = map[string]*pooled[V]{}, true
	p.mu.Unlock()
	for _, c := range conns {
		p.close(c.v)
	}
}
