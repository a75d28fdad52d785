package dispatch

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
)

// Breaker states, as the API and metrics show them.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half_open"
)

// Breakers are the circuit breakers of one process, one per (tenant,
// destination URL), shared by all its workers. After Failures consecutive
// failed attempts a breaker opens: attempts to that destination are shed
// (rescheduled without being made or counted) until OpenFor has passed;
// then one probe attempt goes through (half-open). A success closes the
// breaker; a failure reopens it for twice as long, up to MaxOpen.
type Breakers struct {
	opts    config.Breaker
	now     func() time.Time
	metrics *metrics.Metrics

	mu sync.Mutex
	m  map[breakerKey]*breaker
	r  *rand.Rand
}

type breakerKey struct{ tenant, url string }

type breaker struct {
	state     string
	failures  int           // consecutive, while closed
	openFor   time.Duration // the current open period
	openUntil time.Time
	probing   bool // the half-open probe is in flight
}

// NewBreakers returns the breakers of a process, tuned by opts
// (config.Defaults fills them). now is the clock (nil: time.Now).
func NewBreakers(opts config.Breaker, now func() time.Time, m *metrics.Metrics) (*Breakers, error) {
	ch := config.Check{Of: "dispatch.NewBreakers"}
	config.Positive(&ch, "opts.Failures", opts.Failures)
	config.Positive(&ch, "opts.OpenFor", opts.OpenFor)
	config.Positive(&ch, "opts.MaxOpen", opts.MaxOpen)
	ch.Require("m (the metrics)", m != nil)
	if err := ch.Err(); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	return &Breakers{opts: opts, now: now, metrics: m, m: make(map[breakerKey]*breaker), r: rand.New(rand.NewPCG(7, 11))}, nil
}

// Allow reports whether an attempt to (tenant, url) may be made now. When
// not, retryAt is when the job should come due again: the next probe time
// plus jitter, so shed jobs do not return all at once. A true answer in the
// half-open state makes the caller the probe: it must Record the outcome.
func (b *Breakers) Allow(tenant, url string) (ok bool, retryAt time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.m[breakerKey{tenant, url}]
	if br == nil || br.state == BreakerClosed {
		return true, time.Time{}
	}
	now := b.now()
	if br.state == BreakerOpen && !now.Before(br.openUntil) {
		b.set(br, BreakerHalfOpen)
	}
	if br.state == BreakerHalfOpen && !br.probing {
		br.probing = true
		return true, time.Time{}
	}
	// Open, or half-open with the probe under way.
	at := br.openUntil
	if at.Before(now) {
		at = now
	}
	return false, at.Add(b.jitter(br.openFor))
}

// Record reports the outcome of an attempt Allow let through.
func (b *Breakers) Record(tenant, url string, success bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := breakerKey{tenant, url}
	br := b.m[k]
	if success {
		if br != nil {
			if br.state != BreakerClosed {
				b.set(br, BreakerClosed)
			}
			delete(b.m, k) // a healthy destination costs nothing
		}
		return
	}
	if br == nil {
		br = &breaker{state: BreakerClosed}
		b.m[k] = br
	}
	switch br.state {
	case BreakerClosed:
		br.failures++
		if br.failures >= b.opts.Failures {
			b.open(br, b.opts.OpenFor)
		}
	case BreakerHalfOpen:
		b.open(br, min(2*br.openFor, b.opts.MaxOpen))
	}
}

// Blocked reports whether attempts to (tenant, url) are being shed now
// (open, and not yet time for the probe).
func (b *Breakers) Blocked(tenant, url string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.m[breakerKey{tenant, url}]
	return br != nil && br.state == BreakerOpen && b.now().Before(br.openUntil)
}

// State is the breaker's state for the API: closed, open or half_open.
func (b *Breakers) State(tenant, url string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.m[breakerKey{tenant, url}]
	if br == nil {
		return BreakerClosed
	}
	if br.state == BreakerOpen && !b.now().Before(br.openUntil) {
		return BreakerHalfOpen // the next attempt will be the probe
	}
	return br.state
}

func (b *Breakers) open(br *breaker, d time.Duration) {
	br.openFor, br.openUntil, br.probing, br.failures = d, b.now().Add(d), false, 0
	b.set(br, BreakerOpen)
}

func (b *Breakers) set(br *breaker, state string) {
	was := br.state
	br.state = state
	if state != BreakerHalfOpen {
		br.probing = false
	}
	if was != state {
		b.metrics.BreakerChanges.WithLabelValues(state).Inc()
		b.gauge()
	}
}

// gauge refreshes the count of breakers not closed.
func (b *Breakers) gauge() {
	n := 0
	for _, br := range b.m {
		if br.state != BreakerClosed {
			n++
		}
	}
	b.metrics.BreakersOpen.Set(float64(n))
}

// jitter spreads shed jobs over up to a quarter of the open period (at
// most 30s) after the probe time.
func (b *Breakers) jitter(openFor time.Duration) time.Duration {
	span := min(openFor/4, 30*time.Second)
	if span <= 0 {
		return 0
	}
	return time.Duration(b.r.Int64N(int64(span)))
}
