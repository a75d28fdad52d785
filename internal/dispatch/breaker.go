package dispatch

import (
	"context"
	"sort"
	"sync"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
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
// (rescheduled without being made or counted, all to the same instant, so
// they keep their arrival order) until OpenFor has passed;
// then one probe attempt goes through (half-open). A success closes the
// breaker; a failure reopens it for twice as long, up to MaxOpen.
type Breakers struct {
	opts    config.Breaker
	now     func() time.Time
	metrics *metrics.Metrics

	mu sync.Mutex
	m  map[breakerKey]*breaker
}

type breakerKey struct{ tenant, url string }

type breaker struct {
	state     string
	failures  int           // consecutive, while closed
	openFor   time.Duration // the current open period
	openUntil time.Time
	probing   bool // the half-open probe is in flight
	// probeUntil is when jobs shed while the probe is under way come due.
	probeUntil time.Time
	shed       map[string]bool // subscriptions shed since it left closed
	since      time.Time       // when it left closed
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
	return &Breakers{opts: opts, now: now, metrics: m, m: make(map[breakerKey]*breaker)}, nil
}

// Allow reports whether an attempt to (tenant, url) may be made now. When
// not, retryAt is when the job should come due again: the same instant for
// every job shed while the breaker stays in one state (open until the
// probe time; then, while the probe is under way, one more open period),
// so shed jobs keep their place in arrival order. A true answer in the
// half-open state makes the caller the probe: it must Record the outcome.
func (b *Breakers) Allow(tenant, url string) (ok bool, retryAt time.Time) {
	return b.AllowFor(tenant, url, "")
}

// AllowFor is Allow for a job of subscription sub: a breaker remembers the
// subscriptions it shed, so that when it closes their waiting jobs can be
// made due at once (Record's and Close's answer).
func (b *Breakers) AllowFor(tenant, url, sub string) (ok bool, retryAt time.Time) {
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
		br.probeUntil = now.Add(br.openFor)
		return true, time.Time{}
	}
	if sub != "" && len(br.shed) < maxShedRemembered {
		if br.shed == nil {
			br.shed = make(map[string]bool)
		}
		br.shed[sub] = true
	}
	if br.state == BreakerOpen {
		return false, br.openUntil
	}
	// Half-open with the probe under way: its answer decides.
	return false, br.probeUntil
}

// Changed closes the breaker of (tenant, url) if it left closed before
// changedAt, when a subscription sending there was last written by its
// tenant (a verify, a PATCH, a rotation) or last found healthy by another
// process (its breaker closed: store.Claimed.HealedAt), and returns the
// subscriptions it shed. A verify answered, or a probe passed, in another
// process closes that process's breaker only; this is how the others learn
// of it: the jobs it made due come to them with the subscription as it now
// stands (docs/delivery.md#ordering).
func (b *Breakers) Changed(tenant, url string, changedAt time.Time) (woken []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := breakerKey{tenant, url}
	br := b.m[k]
	if br == nil || br.state == BreakerClosed || !changedAt.After(br.since) {
		return nil
	}
	return b.closeLocked(k, br)
}

// maxShedRemembered bounds the subscriptions a breaker remembers having
// shed; beyond it, their jobs simply wait out their shed time.
const maxShedRemembered = 1024

// Record reports the outcome of an attempt Allow let through. A success
// that closes the breaker returns the subscriptions it shed meanwhile.
func (b *Breakers) Record(tenant, url string, success bool) (woken []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := breakerKey{tenant, url}
	br := b.m[k]
	if success {
		if br != nil {
			return b.closeLocked(k, br)
		}
		return nil
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
	return nil
}

// Close closes the breaker of (tenant, url) at once, as a passing
// verification probe does (docs/breakers.md), and
// returns the subscriptions it shed.
func (b *Breakers) Close(tenant, url string) (woken []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	k := breakerKey{tenant, url}
	if br := b.m[k]; br != nil {
		return b.closeLocked(k, br)
	}
	return nil
}

func (b *Breakers) closeLocked(k breakerKey, br *breaker) []string {
	if br.state != BreakerClosed {
		b.set(br, BreakerClosed)
	}
	delete(b.m, k) // a healthy destination costs nothing
	woken := make([]string, 0, len(br.shed))
	for id := range br.shed {
		woken = append(woken, id)
	}
	sort.Strings(woken)
	return woken
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
	if br.state == BreakerClosed {
		br.since = b.now()
	}
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

// Verified is what a passing verification probe of sub does to delivery
// (docs/breakers.md): the breaker of its destination
// closes at once, and its waiting jobs (and those of the other subscriptions
// the breaker shed) are made due now and claimed without waiting for the idle
// poll.
func (d *Dispatcher) Verified(ctx context.Context, sub hub.Subscription) error {
	woken := []string{sub.ID}
	if b := d.cfg.Breakers; b != nil {
		woken = append(woken, b.Close(sub.TenantID, sub.Destination.Address())...)
	}
	if _, err := d.cfg.Store.WakeJobs(ctx, woken); err != nil {
		return err
	}
	d.ledger.hints.add(woken)
	d.Wake()
	return nil
}
