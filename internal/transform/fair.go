package transform

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// The workers are shared by every tenant, fairly
// (docs/filters-and-transforms.md#fair-workers): a free worker goes to the
// waiting tenant that used the workers least lately, a tenant whose
// programs hit their limits lately never holds every worker while another
// tenant is about, one tenant's previews never hold every worker, and
// nobody waits longer than maxWait.
const (
	// maxWait bounds the wait for a worker. Past it the run fails with
	// ErrBusy, a transform_limit of its own, instead of waiting on.
	maxWait = 2 * time.Second
	// heavyFor is how long a tenant counts as heavy after one of its
	// programs hit its time or memory limit (or lost its worker).
	heavyFor = 10 * time.Second
	// activeFor is how long a tenant counts as about after it last asked
	// for a worker: a heavy tenant is held to fewer than every worker
	// only while another is about, so one tenant alone keeps them all.
	activeFor = 10 * time.Second
	// usageHalfLife is how fast a tenant's use of the workers is forgotten.
	usageHalfLife = 10 * time.Second
	// keepShares is how many tenants' shares are kept before idle ones,
	// whose use is forgotten, are dropped.
	keepShares = 256
)

// ErrBusy is a run that waited maxWait for a worker without getting one.
var ErrBusy = fmt.Errorf("transform: transform_limit: no transform worker free within %s (the workers are busy; a tenant whose programs keep hitting their limits waits behind the others)", maxWait)

// ErrHeld is a delivery of a heavy tenant that its share holds back: it
// fails at once, to be retried on its schedule, rather than hold one of
// the dispatcher's workers while it waits.
var ErrHeld = fmt.Errorf("transform: transform_limit: this tenant's programs hit their limits in the last %s, so its transforms run one at a time while other tenants use the workers: retried later", heavyFor)

// Caller is on whose behalf a program runs: the tenant whose share of the
// workers it takes, and whether it is a preview (transform-preview, a
// test event) rather than a delivery.
type Caller struct {
	Tenant  string
	Preview bool
}

// fair hands out size worker slots.
type fair struct {
	size    int
	maxWait time.Duration
	now     func() time.Time

	mu     sync.Mutex
	busy   int
	shares map[string]*share
	// queued are the shares with waiters, holders those holding slots:
	// what a grant looks at, however many tenants there are.
	queued, holders map[*share]struct{}
	// last and prev are the two tenants that asked last (distinct), and
	// when: whether a tenant other than one is about.
	last, prev     *share
	lastAt, prevAt time.Time
}

// share is one tenant's part of the workers.
type share struct {
	tenant       string
	held         int // slots it holds
	heldPreviews int // of which previews
	// usage is the slot time it used, in seconds, decayed to usageAt.
	usage   float64
	usageAt time.Time
	limitAt time.Time // when a program of it last hit a limit
	queue   [2][]*waiter
}

type waiter struct {
	s       *share
	preview bool
	since   time.Time
	ready   chan struct{} // closed once granted, or refused
	granted bool
	err     error // why it was refused (ErrHeld)
}

func newFair(size int, maxWait time.Duration, now func() time.Time) *fair {
	return &fair{size: size, maxWait: maxWait, now: now, shares: make(map[string]*share),
		queued: make(map[*share]struct{}), holders: make(map[*share]struct{})}
}

// grant is one slot, held until release.
type grant struct {
	f       *fair
	s       *share
	preview bool
	at      time.Time
	once    sync.Once
}

// acquire waits for a slot for c: at most maxWait (ErrBusy past it), or
// until ctx ends.
func (f *fair) acquire(ctx context.Context, c Caller) (*grant, error) {
	f.mu.Lock()
	now := f.now()
	s := f.shares[c.Tenant]
	if s == nil {
		s = &share{tenant: c.Tenant}
		f.shares[c.Tenant] = s
	}
	f.seen(s, now)
	w := &waiter{s: s, preview: c.Preview, since: now, ready: make(chan struct{})}
	q := kind(c.Preview)
	s.queue[q] = append(s.queue[q], w)
	f.queued[s] = struct{}{}
	f.dispatch(now)
	if w.granted {
		f.mu.Unlock()
		return &grant{f: f, s: s, preview: c.Preview, at: now}, nil
	}
	if w.err != nil {
		f.mu.Unlock()
		return nil, w.err
	}
	f.mu.Unlock()

	timer := time.NewTimer(f.maxWait)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
	case <-timer.C:
		err = ErrBusy
	case <-ctx.Done():
		err = ctxError(ctx)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if w.granted {
		// Granted as it gave up: it takes the slot after all.
		return &grant{f: f, s: s, preview: c.Preview, at: f.now()}, nil
	}
	if w.err != nil {
		return nil, w.err // refused, and out of the queue already
	}
	s.queue[q] = remove(s.queue[q], w)
	if !s.waiting() {
		delete(f.queued, s)
	}
	return nil, err
}

// limit marks g's tenant as heavy from now: its program hit a limit.
func (g *grant) limit() {
	g.f.mu.Lock()
	g.s.limitAt = g.f.now()
	g.f.mu.Unlock()
}

// release gives the slot back, charging its tenant the time it held it.
func (g *grant) release() {
	g.once.Do(func() {
		f := g.f
		f.mu.Lock()
		defer f.mu.Unlock()
		now := f.now()
		s := g.s
		s.usage = s.decayed(now) + now.Sub(g.at).Seconds()
		s.usageAt = now
		s.held--
		if g.preview {
			s.heldPreviews--
		}
		if s.held == 0 {
			delete(f.holders, s)
		}
		f.busy--
		f.dispatch(now)
		if len(f.shares) > keepShares {
			f.prune(now)
		}
	})
}

func kind(preview bool) int {
	if preview {
		return 1
	}
	return 0
}

// seen notes that s asked for a slot at now.
func (f *fair) seen(s *share, now time.Time) {
	if f.last == s {
		f.lastAt = now
		return
	}
	f.prev, f.prevAt = f.last, f.lastAt
	f.last, f.lastAt = s, now
}

// othersAbout reports whether a tenant other than s asked for a slot
// within activeFor, or holds or waits for one.
func (f *fair) othersAbout(s *share, now time.Time) bool {
	other, at := f.last, f.lastAt
	if other == s {
		other, at = f.prev, f.prevAt
	}
	return other != nil && (now.Sub(at) < activeFor || other.held > 0 || other.waiting())
}

func (s *share) waiting() bool { return len(s.queue[0])+len(s.queue[1]) > 0 }

func (s *share) heavy(now time.Time) bool {
	return !s.limitAt.IsZero() && now.Sub(s.limitAt) < heavyFor
}

// decayed is s's usage as of now.
func (s *share) decayed(now time.Time) float64 {
	if s.usage == 0 {
		return 0
	}
	return s.usage * math.Exp2(-now.Sub(s.usageAt).Seconds()/usageHalfLife.Seconds())
}

// dispatch grants free slots: each to the first waiter that may have one,
// of the tenant with the least usage (ties: the longest waiting).
func (f *fair) dispatch(now time.Time) {
	f.refuseHeld(now)
	for f.busy < f.size {
		heavyHeld := f.heavyHeld(now)
		var best *waiter
		var bestUsage float64
		for s := range f.queued {
			w := f.next(s, heavyHeld, now)
			if w == nil {
				continue
			}
			u := s.decayed(now)
			if best == nil || u < bestUsage || u == bestUsage && w.since.Before(best.since) {
				best, bestUsage = w, u
			}
		}
		if best == nil {
			return
		}
		s := best.s
		q := kind(best.preview)
		s.queue[q] = remove(s.queue[q], best)
		if !s.waiting() {
			delete(f.queued, s)
		}
		f.holders[s] = struct{}{}
		s.held++
		if best.preview {
			s.heldPreviews++
		}
		f.busy++
		best.granted = true
		close(best.ready)
	}
}

// heavyHeld is how many slots heavy tenants hold.
func (f *fair) heavyHeld(now time.Time) int {
	n := 0
	for s := range f.holders {
		if s.heavy(now) {
			n += s.held
		}
	}
	return n
}

// refuseHeld fails at once the waiting deliveries of the heavy tenants
// next holds back (ErrHeld): the dispatcher's worker that asks goes on to
// other tenants' jobs, and the job is retried on its schedule. A heavy
// tenant's previews wait, up to maxWait, as their callers do.
func (f *fair) refuseHeld(now time.Time) {
	if f.size < 2 || f.heavyHeld(now) < f.size-1 {
		return
	}
	for s := range f.queued {
		if len(s.queue[0]) == 0 || !s.heavy(now) || !f.othersAbout(s, now) {
			continue
		}
		for _, w := range s.queue[0] {
			w.err = ErrHeld
			close(w.ready)
		}
		s.queue[0] = nil
		if !s.waiting() {
			delete(f.queued, s)
		}
	}
}

// next is the waiter of s that may take a slot now, nil if none: its
// deliveries before its previews; a preview only while the tenant's
// previews hold fewer than every slot; none for a heavy tenant while
// heavy tenants hold every slot but one and another tenant is about.
func (f *fair) next(s *share, heavyHeld int, now time.Time) *waiter {
	if !s.waiting() {
		return nil
	}
	if f.size > 1 && s.heavy(now) && heavyHeld >= f.size-1 && f.othersAbout(s, now) {
		return nil
	}
	if len(s.queue[0]) > 0 {
		return s.queue[0][0]
	}
	if f.size > 1 && s.heldPreviews >= f.size-1 {
		return nil
	}
	return s.queue[1][0]
}

// prune drops the shares of tenants that hold nothing, wait for nothing,
// and whose use and limits are forgotten.
func (f *fair) prune(now time.Time) {
	for k, s := range f.shares {
		if s.held == 0 && !s.waiting() && s.decayed(now) < 0.001 && !s.heavy(now) && s != f.last && s != f.prev {
			delete(f.shares, k)
		}
	}
}

func remove(ws []*waiter, w *waiter) []*waiter {
	for i, x := range ws {
		if x == w {
			return append(ws[:i], ws[i+1:]...)
		}
	}
	return ws
}
