package api

import (
	"math"
	"sync"
	"time"
)

// Waiters wake long-polling pulls when a tenant's events are stored: each
// tenant has a channel that is closed (and replaced) on every notification.
// Release answers them all when the server shuts down.
type Waiters struct {
	mu      sync.Mutex
	m       map[string]chan struct{}
	holding int // pulls waiting now

	releaseOnce sync.Once
	released    chan struct{}
}

// NewWaiters returns an empty set of waiters.
func NewWaiters() *Waiters {
	return &Waiters{m: make(map[string]chan struct{}), released: make(chan struct{})}
}

// Release answers every long poll at once with what it has, and every
// later one without waiting: the server is shutting down, and an open
// 30 s poll must not hold the shutdown (docs/operations.md). Run it from
// http.Server.RegisterOnShutdown.
func (w *Waiters) Release() { w.releaseOnce.Do(func() { close(w.released) }) }

// Released is closed by Release.
func (w *Waiters) Released() <-chan struct{} { return w.released }

func (w *Waiters) isReleased() bool {
	select {
	case <-w.released:
		return true
	default:
		return false
	}
}

// Holding is how many long polls are waiting for events now.
func (w *Waiters) Holding() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.holding
}

func (w *Waiters) hold(delta int) {
	w.mu.Lock()
	w.holding += delta
	w.mu.Unlock()
}

// Wait returns a channel closed at the tenant's next notification. Take it
// before looking for events, so one stored in between is not missed.
func (w *Waiters) Wait(tenant string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	ch, ok := w.m[tenant]
	if !ok {
		ch = make(chan struct{})
		w.m[tenant] = ch
	}
	return ch
}

// Notify wakes everyone waiting for these tenants' events.
func (w *Waiters) Notify(tenants []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range tenants {
		if ch, ok := w.m[t]; ok {
			close(ch)
			delete(w.m, t)
		}
	}
}

// limiter is a token bucket per tenant: rate tokens a second, up to burst.
type limiter struct {
	rate  float64
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newLimiter(rate float64, burst int, now func() time.Time) *limiter {
	return &limiter{rate: rate, burst: float64(burst), now: now, buckets: make(map[string]*bucket)}
}

// allow takes a token of tenant's bucket; when there is none, it says how
// long until there is.
func (l *limiter) allow(tenant string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.buckets[tenant]
	if !ok {
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[tenant] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
}
