// Package concurrency keeps, per destination host, a limit on attempts in
// flight that follows the receiver's answers (docs/delivery.md, "Concurrency
// that follows the receiver").
//
// # The algorithm
//
// Time is cut into windows of about one round trip (the host's recent
// latency, at least [minWindow]). At the end of each window the limiter
// looks at the answers that came in it:
//
//   - Back-pressure (a timeout, a refused or reset connection, 429, 503):
//     the limit is multiplied by 0.9, or halved when most answers of the
//     window were back-pressure. One cut per window, however many answers
//     said so, since they all answer the same flight.
//   - Latency risen to more than twice the host's best: the limit is
//     multiplied by 0.9.
//   - Latency within 1.5 times the best, and the limit full (as many
//     attempts in flight as it allows) for at least half the window: the
//     limit grows by the square root of itself (1, 1, 1, 2, 2, ...). A
//     host whose attempts do not fill the limit gives no evidence that
//     more would help, and a burst that fills it for an instant little:
//     the limit stays where it is.
//
// Between 1.5 and 2 times the best the limit holds. It never leaves
// [1, ceiling]; the caller sets the ceiling and may change it at any time.
// A new limiter starts at 1, so the first windows measure the host unloaded.
//
// The host's best is the lowest window mean seen. A best that no window
// has come near for [probeEvery] is measured again: for one round of
// attempts the limiter admits only half its limit, and the mean latency of
// the attempts sent at that lower concurrency becomes the best, higher or
// lower. That is how a host that became slower for reasons of its own is
// not held at 1 forever, and why the best cannot creep up with the latency
// this limiter causes itself (a best that followed the recent latency
// would). At a limit of 1 the same measure is taken at once when latency
// is above the best, since at 1 nothing queues behind this limiter's
// attempts.
//
// Why this and not the others: AIMD alone (Netflix's AIMDLimit) reacts only
// to drops and timeouts, so a receiver that slows as it is loaded is driven
// to the ceiling; Vector's adaptive request concurrency compares each
// window with an average of past windows, a reference that rises with the
// queue the limiter builds; Netflix's Gradient2 likewise compares with a
// long-term average and keeps a fixed queue on top; Vegas compares each
// sample, not a window, with the minimum, and re-probes by taking the
// current, loaded latency as the new minimum. Windows of one round trip and
// a demand check are taken from Vector's design, the minimum as the
// reference from Vegas, and the re-measure at lower concurrency from TCP
// BBR's probe of its minimum round trip.
package concurrency

import (
	"math"
	"sync"
	"time"
)

// Outcome is what an attempt says about its receiver's capacity.
type Outcome int

const (
	// Ignore: the attempt says nothing about the receiver (canceled, not
	// sent, failed before a connection): the limit does not move. It is
	// the zero value, so an outcome left unset never moves the limit.
	Ignore Outcome = iota
	// Success: the receiver answered with a status other than 429 and 503
	// (4xx and 5xx included: it answered, and its latency counts).
	Success
	// Backpressure: a timeout, a refused or reset connection, 429 or 503.
	Backpressure
)

func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Backpressure:
		return "backpressure"
	default:
		return "ignore"
	}
}

// Reason is why a limit changed, for the debug log line.
type Reason string

const (
	Grew         Reason = "latency near its best with the limit in use"
	BackPressure Reason = "the receiver answered with back-pressure"
	Slowed       Reason = "latency above twice its best"
	Capped       Reason = "the ceiling was lowered"
	Started      Reason = "a new host's ceiling grew: it starts at the initial limit, or its ceiling if lower"
)

// Change is one change of a host's limit, handed to the OnChange function
// given to NewHosts (at most one per window, so a debug log line each is
// cheap).
type Change struct {
	Host     string
	From, To int
	Why      Reason
	Latency  time.Duration // the host's recent latency
	Best     time.Duration // the host's best latency
}

// Snapshot is a limiter's state, for display.
type Snapshot struct {
	Limit         int           // attempts allowed in flight now
	InFlight      int           // attempts in flight
	Ceiling       int           // the limit's upper bound, as last set
	RecentLatency time.Duration // moving average of the window means; 0 before the first answer
	BestLatency   time.Duration // the lowest window mean (the reference); 0 before the first answer
	LastChange    time.Time     // when the limit last changed; zero if never
}

const (
	// minWindow is the shortest window: below it, loopback-fast hosts
	// would decide on one or two answers.
	minWindow = 10 * time.Millisecond
	// growBelow and shrinkAbove bound the window mean, as multiples of
	// the best, for growing and for cutting; slack is added to both so
	// that a host answering in microseconds is not judged by scheduler
	// jitter.
	growBelow   = 1.5
	shrinkAbove = 2.0
	confirmAt   = 1.1 // a window mean this near the best confirms it
	slack       = float64(time.Millisecond)
	// decrease is the cut for back-pressure and latency; halve is the cut
	// when most answers of a window were back-pressure.
	decrease = 0.9
	halve    = 0.5
	// recentWeight is the weight of a window's mean in the recent latency.
	recentWeight = 0.3
	// probeEvery is how long the best may go unconfirmed before it is
	// measured again at half the limit.
	probeEvery = 30 * time.Second
	// probeMinSamples is the fewest answers a measure of the best takes.
	probeMinSamples = 3
)

// Limiter is one host's limit. It is safe for concurrent use; it has no
// goroutine and reads time only from its clock.
type Limiter struct {
	host     string
	now      func() time.Time
	onChange func(Change)

	mu       sync.Mutex
	limit    int
	ceiling  int
	initial  int // where a new host's limit starts (at most its ceiling): Hosts.SetInitial
	inFlight int
	lastUsed time.Time // the last acquire, release or lookup (Hosts forgets idle ones)
	changed  time.Time // the last change of the limit
	// since is when the concurrency last changed (the limit, or a
	// measure of the best starting or ending): only answers to attempts
	// sent since judge the limit.
	since time.Time

	// The current window.
	winStart time.Time
	winSum   time.Duration // latencies of its successes
	winOK    int           // its successes
	freshSum time.Duration // latencies of its successes sent since l.since
	freshOK  int           // those successes
	winBP    int           // its back-pressure answers
	// How long the limit was full (in-flight at the limit, attempts
	// waiting or not) in the window: fullFor until fullAt, and since
	// fullAt if it is not zero.
	fullAt  time.Time
	fullFor time.Duration

	recent float64 // ns; 0 = none yet
	best   float64 // ns; 0 = none yet
	bestAt time.Time

	// A measure of the best in progress: until it has its answers, at
	// most probeCap attempts go out, and the successes of those sent
	// after probeStart are its samples.
	probing    bool
	probeCap   int
	probeStart time.Time
	probeSum   time.Duration
	probeN     int
}

// NewLimiter returns a limiter for one host, at limit 1, with the given
// ceiling (at least 1), on the clock now.
func NewLimiter(ceiling int, now func() time.Time) *Limiter {
	t := now()
	return &Limiter{now: now, limit: 1, ceiling: max(1, ceiling), lastUsed: t, winStart: t, bestAt: t}
}

// TryAcquire takes room for one attempt: false when the attempts in flight
// already fill the limit. Each true must be followed by one Release.
func (l *Limiter) TryAcquire() bool {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastUsed = now
	if l.inFlight == 0 && l.winOK == 0 && l.winBP == 0 {
		// The first attempt after a quiet spell starts the window, so it
		// does not span the silence.
		l.winStart, l.fullFor = now, 0
	}
	room := l.limit
	if l.probing {
		room = min(room, l.probeCap)
	}
	if l.inFlight >= room {
		l.markFull(now)
		return false
	}
	l.inFlight++
	if l.inFlight >= l.limit {
		l.markFull(now)
	}
	return true
}

// Acquire counts one more attempt in flight whatever the limit: for an
// attempt the caller admits by a rule of its own (a tenant under its fair
// share of a host, docs/delivery.md, "One receiver host"). It counts
// toward the limit being full. Each Acquire must be followed by one
// Release.
func (l *Limiter) Acquire() {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastUsed = now
	if l.inFlight == 0 && l.winOK == 0 && l.winBP == 0 {
		l.winStart, l.fullFor = now, 0
	}
	l.inFlight++
	if l.inFlight >= l.limit {
		l.markFull(now)
	}
}

// Limit is the current limit: the attempts in flight the host is given.
// While the host's best latency is being measured again, it is the lower
// cap of that measure.
func (l *Limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.probing {
		return min(l.limit, l.probeCap)
	}
	return l.limit
}

// Release gives back an attempt's room, with what the attempt said: its
// outcome and, for a Success, how long the answer took.
func (l *Limiter) Release(o Outcome, rtt time.Duration) {
	now := l.now()
	l.mu.Lock()
	if l.inFlight > 0 {
		l.inFlight--
	}
	if !l.fullAt.IsZero() && l.inFlight < l.limit {
		l.fullFor += now.Sub(l.fullAt)
		l.fullAt = time.Time{}
	}
	l.lastUsed = now
	switch o {
	case Success:
		rtt = max(rtt, 0)
		l.winSum += rtt
		l.winOK++
		sent := now.Add(-rtt)
		if !sent.Before(l.since) {
			l.freshSum += rtt
			l.freshOK++
		}
		if l.probing && !sent.Before(l.probeStart) {
			l.probeSum += rtt
			l.probeN++
		}
	case Backpressure:
		l.winBP++
	}
	var c Change
	if l.probing && l.probeN >= max(probeMinSamples, l.probeCap) {
		l.best = float64(l.probeSum) / float64(l.probeN)
		l.probing = false
		l.bestAt = now
		l.restart(now)
	}
	if (l.freshOK > 0 || l.winBP > 0) && now.Sub(l.winStart) >= l.windowLength() {
		c = l.endWindow(now)
	}
	f := l.onChange
	l.mu.Unlock()
	if c.From != c.To && f != nil {
		f(c)
	}
}

// restart starts the judging of the limit again at now, after the
// concurrency changed: the window restarts (keeping its back-pressure,
// which counts whenever its attempts were sent), and only answers to
// attempts sent from now on judge the limit. l.mu is held.
func (l *Limiter) restart(now time.Time) {
	l.since = now
	l.freshSum, l.freshOK = 0, 0
	bp := l.winBP
	l.newWindow(now)
	l.winBP = bp
}

// newWindow starts a window at now; l.mu is held.
func (l *Limiter) newWindow(now time.Time) {
	l.winStart, l.winSum, l.winOK, l.winBP = now, 0, 0, 0
	l.fullFor, l.fullAt = 0, time.Time{}
	if l.inFlight >= l.limit {
		l.fullAt = now
	}
}

// markFull notes that the limit is full from now, if it was not; l.mu is
// held.
func (l *Limiter) markFull(now time.Time) {
	if l.fullAt.IsZero() {
		l.fullAt = now
	}
}

// wasFull reports whether the limit was full for at least half of the
// window that ends at now; l.mu is held.
func (l *Limiter) wasFull(now time.Time) bool {
	full := l.fullFor
	if !l.fullAt.IsZero() {
		full += now.Sub(l.fullAt)
	}
	return 2*full >= now.Sub(l.winStart)
}

func (l *Limiter) windowLength() time.Duration {
	return max(minWindow, time.Duration(l.recent))
}

// endWindow decides on the window that ends at now and starts the next;
// l.mu is held. It returns the change made, if any (From == To if none).
//
// Every answer of the window feeds the recent and best latencies, but
// only the answers to attempts sent since the concurrency last changed
// judge the limit: the others were sent under another limit. Back-pressure
// counts whenever it was sent (a timeout answers an attempt sent long ago).
func (l *Limiter) endWindow(now time.Time) Change {
	from := l.limit
	var why Reason
	if l.winOK > 0 {
		mean := float64(l.winSum) / float64(l.winOK)
		if l.recent == 0 {
			l.recent = mean
		} else {
			l.recent += recentWeight * (mean - l.recent)
		}
		switch {
		case l.best == 0 || mean < l.best:
			l.best, l.bestAt = mean, now
		case mean <= l.best*confirmAt+slack:
			l.bestAt = now
		}
	}
	fresh := 0.0
	if l.freshOK > 0 {
		fresh = float64(l.freshSum) / float64(l.freshOK)
	}
	switch {
	case l.winBP > 0:
		f := decrease
		if l.winBP > l.winOK {
			f = halve
		}
		l.limit, why = cut(l.limit, f), BackPressure
	case l.freshOK > 0 && fresh > l.best*shrinkAbove+slack:
		l.limit, why = cut(l.limit, decrease), Slowed
	case l.freshOK > 0 && l.wasFull(now) && !l.probing && fresh <= l.best*growBelow+slack:
		step := max(1, int(math.Sqrt(float64(l.limit))))
		l.limit, why = min(l.ceiling, l.limit+step), Grew
	}
	if !l.probing && l.winOK > 0 &&
		(now.Sub(l.bestAt) >= probeEvery || (l.limit == 1 && l.freshOK > 0 && fresh > l.best*growBelow+slack)) {
		l.probing, l.probeCap, l.probeStart, l.since = true, max(1, l.limit/2), now, now
		l.probeSum, l.probeN = 0, 0
	}
	l.freshSum, l.freshOK = 0, 0
	l.newWindow(now)
	if l.limit == from {
		return Change{}
	}
	l.changed, l.since = now, now
	return l.change(from, why)
}

func (l *Limiter) change(from int, why Reason) Change {
	return Change{Host: l.host, From: from, To: l.limit, Why: why,
		Latency: time.Duration(l.recent), Best: time.Duration(l.best)}
}

// cut multiplies limit by f, rounding down, and keeps it at least 1.
func cut(limit int, f float64) int {
	return max(1, int(float64(limit)*f))
}

// SetCeiling sets the limit's upper bound (at least 1): a limit above it
// comes down to it at once; a higher ceiling lets the limit grow, as the
// receiver's answers allow.
func (l *Limiter) SetCeiling(n int) {
	l.mu.Lock()
	c := l.setCeiling(n, l.now())
	f := l.onChange
	l.mu.Unlock()
	if c.From != c.To && f != nil {
		f(c)
	}
}

// setCeiling is SetCeiling with l.mu held and the time given.
func (l *Limiter) setCeiling(n int, now time.Time) Change {
	l.ceiling = max(1, n)
	if l.limit < min(l.initial, l.ceiling) && l.changed.IsZero() && l.best == 0 {
		// A new host's ceiling is first the max_in_flight of the one
		// subscription that found it, and grows as its others send
		// there: until anything was measured its limit is the initial
		// one, or its ceiling if lower (docs/delivery.md), not the
		// first subscription's 1.
		from := l.limit
		l.limit = min(l.initial, l.ceiling)
		l.restart(now)
		return l.change(from, Started)
	}
	if l.limit <= l.ceiling {
		return Change{}
	}
	from := l.limit
	l.limit, l.changed = l.ceiling, now
	l.restart(now)
	return l.change(from, Capped)
}

// Snapshot returns the limiter's state, for display.
func (l *Limiter) Snapshot() Snapshot {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Snapshot{Limit: l.limit, InFlight: l.inFlight, Ceiling: l.ceiling,
		RecentLatency: time.Duration(l.recent), BestLatency: time.Duration(l.best), LastChange: l.changed}
}
