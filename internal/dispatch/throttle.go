package dispatch

import (
	"sync"
	"time"
)

// throttles are the token buckets of this process's rate-limited
// subscriptions (docs/rate-limits.md,
// rate_limit.per_second): each holds one second's worth of tokens and refills
// at its rate, on the dispatcher's clock.
//
// A bucket is kept as its theoretical arrival time (GCRA): the instant the
// bucket would be empty again if nothing more were taken. That is exact
// integer arithmetic, and a refused take changes nothing, so every job
// refused before the next token comes is told the same instant: throttled
// jobs of an ordered subscription keep their arrival order, as shed ones do.
type throttles struct {
	mu sync.Mutex
	m  map[string]*bucket
}

type bucket struct {
	rate int
	tat  time.Time
}

// maxIdleBuckets bounds the buckets kept: past it, full buckets (which
// are the same as absent ones) are dropped.
const maxIdleBuckets = 4096

// take takes one of subscription sub's tokens at now, for a limit of rate
// per second. When none is left it returns false and when the next one
// comes.
func (t *throttles) take(sub string, rate int, now time.Time) (ok bool, next time.Time) {
	interval := time.Second / time.Duration(rate)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = make(map[string]*bucket)
	}
	b := t.m[sub]
	if b == nil || b.rate != rate {
		if len(t.m) >= maxIdleBuckets {
			t.prune(now)
		}
		b = &bucket{rate: rate, tat: now}
		t.m[sub] = b
	}
	if b.tat.Before(now) {
		b.tat = now // a full bucket holds no more than one second's worth
	}
	if at := b.tat.Add(-time.Duration(rate-1) * interval); now.Before(at) {
		return false, at
	}
	b.tat = b.tat.Add(interval)
	return true, time.Time{}
}

// prune drops the buckets that are full at now.
func (t *throttles) prune(now time.Time) {
	for id, b := range t.m {
		if !b.tat.After(now) {
			delete(t.m, id)
		}
	}
}
