package concurrency

import (
	"container/heap"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// sim drives a limiter on a fake clock: a caller that wants demand()
// attempts in flight, and a receiver whose answer to an attempt depends on
// how many are in flight when it is sent.
type sim struct {
	clock   *testkit.Clock
	l       *Limiter
	demand  func() int
	answer  func(inFlight int) (time.Duration, Outcome)
	flights flights
	changes []Change
	peak    int // the highest limit seen
	sent    int
}

type flight struct {
	end time.Time
	rtt time.Duration
	o   Outcome
}

type flights []flight

func (f flights) Len() int           { return len(f) }
func (f flights) Less(i, j int) bool { return f[i].end.Before(f[j].end) }
func (f flights) Swap(i, j int)      { f[i], f[j] = f[j], f[i] }
func (f *flights) Push(x any)        { *f = append(*f, x.(flight)) }
func (f *flights) Pop() any {
	old := *f
	x := old[len(old)-1]
	*f = old[:len(old)-1]
	return x
}

func newSim(ceiling, demand int, answer func(int) (time.Duration, Outcome)) *sim {
	s := &sim{clock: testkit.NewClock(), answer: answer}
	s.demand = func() int { return demand }
	s.l = NewLimiter(ceiling, s.clock.Now)
	s.l.onChange = func(c Change) { s.changes = append(s.changes, c) }
	return s
}

// run sends and answers for d of fake time.
func (s *sim) run(d time.Duration) {
	end := s.clock.Now().Add(d)
	for s.clock.Now().Before(end) {
		for len(s.flights) < s.demand() && s.l.TryAcquire() {
			rtt, o := s.answer(len(s.flights) + 1)
			heap.Push(&s.flights, flight{end: s.clock.Now().Add(rtt), rtt: rtt, o: o})
			s.sent++
		}
		s.peak = max(s.peak, s.l.Snapshot().Limit)
		if len(s.flights) == 0 {
			s.clock.Advance(time.Millisecond) // no demand: time passes
			continue
		}
		f := heap.Pop(&s.flights).(flight)
		s.clock.Set(f.end)
		s.l.Release(f.o, f.rtt)
	}
}

func (s *sim) limit() int { return s.l.Snapshot().Limit }

func flat(rtt time.Duration) func(int) (time.Duration, Outcome) {
	return func(int) (time.Duration, Outcome) { return rtt, Success }
}

// saturating is a receiver with workers that each take service per
// request: past workers in flight, requests queue and latency grows with
// them.
func saturating(workers int, service time.Duration) func(int) (time.Duration, Outcome) {
	return func(n int) (time.Duration, Outcome) {
		return service * time.Duration((n+workers-1)/workers), Success
	}
}

func TestLimiter_StartsAtOneAndGrowsWithDemandWhileLatencyIsFlat(t *testing.T) {
	s := newSim(200, 40, flat(100*time.Millisecond))
	if got := s.limit(); got != 1 {
		t.Fatalf("a new limiter's limit is %d, want 1", got)
	}
	s.run(10 * time.Second)
	// Demand is 40: the limit grows until it stops being reached, one
	// step past 40 at most.
	if got := s.limit(); got < 40 || got > 46 {
		t.Fatalf("limit %d after 10s of demand 40 at a flat 100ms, want 40..46", got)
	}
	for _, c := range s.changes {
		if c.To < c.From || c.Why != Grew {
			t.Fatalf("a flat receiver saw a cut: %+v", c)
		}
	}
	snap := s.l.Snapshot()
	if snap.RecentLatency != 100*time.Millisecond || snap.BestLatency != 100*time.Millisecond {
		t.Fatalf("latencies %v / %v, want 100ms / 100ms", snap.RecentLatency, snap.BestLatency)
	}
}

func TestLimiter_GrowsQuicklyForASlowReceiver(t *testing.T) {
	// 500ms answers and demand for 200: the square-root steps get there
	// in tens of windows, not two hundred.
	s := newSim(200, 1000, flat(500*time.Millisecond))
	s.run(20 * time.Second)
	if got := s.limit(); got != 200 {
		t.Fatalf("limit %d after 20s at 500ms with unbounded demand, want the ceiling 200", got)
	}
}

func TestLimiter_DoesNotGrowWithoutDemand(t *testing.T) {
	// A caller with one attempt at a time against an instant receiver:
	// the limit takes one step (1 is always full) and stops there.
	s := newSim(64, 1, flat(200*time.Microsecond))
	s.run(5 * time.Second)
	if got := s.limit(); got > 2 {
		t.Fatalf("limit %d for a demand of 1, want at most 2", got)
	}
	// Demand of 3: it follows to just past 3.
	s.demand = func() int { return 3 }
	s.run(5 * time.Second)
	if got := s.limit(); got < 3 || got > 5 {
		t.Fatalf("limit %d for a demand of 3, want 3..5", got)
	}
}

func TestLimiter_SettlesNearTheKneeOfASaturatingReceiver(t *testing.T) {
	for _, workers := range []int{1, 4, 16} {
		// Latency 10ms up to workers in flight, then 10ms per further
		// batch of workers: at the ceiling 200 with 4 workers, 500ms.
		s := newSim(200, 1000, saturating(workers, 10*time.Millisecond))
		s.run(3 * time.Minute) // six re-measures of the best: long enough for a creep to show
		if got := s.limit(); got > 2*workers+2 || got < max(1, workers/2) {
			t.Errorf("%d workers: limit %d after 3 minutes, want near the knee (%d..%d)", workers, got, max(1, workers/2), 2*workers+2)
		}
		if s.peak > 3*workers+3 {
			t.Errorf("%d workers: limit reached %d on the way, want at most %d", workers, s.peak, 3*workers+3)
		}
		snap := s.l.Snapshot()
		if snap.BestLatency > 15*time.Millisecond {
			t.Errorf("%d workers: best latency crept to %v, want about 10ms", workers, snap.BestLatency)
		}
	}
}

func TestLimiter_BackPressureCutsMultiplicativelyAndRecovers(t *testing.T) {
	refuse := false
	s := newSim(32, 1000, func(int) (time.Duration, Outcome) {
		if refuse {
			return time.Millisecond, Backpressure
		}
		return 20 * time.Millisecond, Success
	})
	s.run(5 * time.Second)
	if got := s.limit(); got != 32 {
		t.Fatalf("limit %d before back-pressure, want the ceiling 32", got)
	}
	refuse = true
	s.changes = nil
	s.run(time.Second)
	if got := s.limit(); got != 1 {
		t.Fatalf("limit %d after a second of 503s, want 1", got)
	}
	for _, c := range s.changes {
		if c.Why != BackPressure || c.To > max(1, c.From/2) {
			t.Fatalf("a window of nothing but back-pressure changed %d to %d (%s), want halved", c.From, c.To, c.Why)
		}
	}
	if n := len(s.changes); n > 5 {
		t.Fatalf("%d cuts from 32 to 1, want 5 halvings", n)
	}
	refuse = false
	s.run(5 * time.Second)
	if got := s.limit(); got != 32 {
		t.Fatalf("limit %d after the receiver recovered, want back at 32", got)
	}
}

func TestLimiter_SomeBackPressureCutsByATenth(t *testing.T) {
	// A receiver that answers 429 past 8 requests at once: the limit
	// oscillates below 8-ish, each cut to 0.9 of it.
	s := newSim(64, 1000, func(n int) (time.Duration, Outcome) {
		if n > 8 {
			return time.Millisecond, Backpressure
		}
		return 20 * time.Millisecond, Success
	})
	s.run(time.Minute)
	if got := s.limit(); got < 4 || got > 12 {
		t.Fatalf("limit %d against a receiver refusing past 8, want 4..12", got)
	}
	for _, c := range s.changes {
		if c.Why == BackPressure && c.To > int(float64(c.From)*0.9) && c.From > 1 {
			t.Fatalf("a back-pressure cut from %d to %d, want at most 0.9 of it", c.From, c.To)
		}
	}
	if s.peak > 20 {
		t.Fatalf("limit reached %d, want it kept near 8", s.peak)
	}
}

func TestLimiter_CutsWhenLatencyDoublesAndRemeasuresTheBest(t *testing.T) {
	// A receiver at 10ms whatever the load, that becomes 40ms whatever
	// the load (for reasons of its own): the limit is cut first, then the
	// best is measured again and the limit grows back to the demand.
	rtt := 10 * time.Millisecond
	s := newSim(64, 30, func(int) (time.Duration, Outcome) { return rtt, Success })
	s.run(5 * time.Second)
	if got := s.limit(); got < 30 {
		t.Fatalf("limit %d at a flat 10ms with demand 30, want at least 30", got)
	}
	rtt = 40 * time.Millisecond
	s.changes = nil
	s.run(time.Second)
	if got := s.limit(); got >= 30 {
		t.Fatalf("limit %d a second after latency quadrupled, want cut", got)
	}
	var slowed bool
	for _, c := range s.changes {
		slowed = slowed || c.Why == Slowed
	}
	if !slowed {
		t.Fatalf("changes %+v, want a cut for latency", s.changes)
	}
	s.run(time.Minute)
	if got := s.limit(); got < 30 {
		t.Fatalf("limit %d a minute after latency settled at 40ms, want at least the demand 30", got)
	}
	if best := s.l.Snapshot().BestLatency; best != 40*time.Millisecond {
		t.Fatalf("best %v, want the new 40ms", best)
	}
}

func TestLimiter_FollowsAFasterReceiverAtOnce(t *testing.T) {
	rtt := 100 * time.Millisecond
	s := newSim(64, 10, func(int) (time.Duration, Outcome) { return rtt, Success })
	s.run(5 * time.Second)
	rtt = 20 * time.Millisecond
	s.run(time.Second)
	if best := s.l.Snapshot().BestLatency; best != 20*time.Millisecond {
		t.Fatalf("best %v after the receiver became faster, want 20ms", best)
	}
}

func TestLimiter_IgnoredOutcomesDoNotMoveTheLimit(t *testing.T) {
	s := newSim(64, 1000, func(int) (time.Duration, Outcome) { return 50 * time.Millisecond, Ignore })
	s.run(time.Minute)
	if got := s.limit(); got != 1 || len(s.changes) != 0 {
		t.Fatalf("limit %d and changes %+v after only ignored outcomes, want 1 and none", got, s.changes)
	}
	if snap := s.l.Snapshot(); snap.RecentLatency != 0 || snap.BestLatency != 0 {
		t.Fatalf("latencies %v / %v from ignored outcomes, want none", snap.RecentLatency, snap.BestLatency)
	}
}

func TestLimiter_CeilingBoundsTheLimitAndMayChange(t *testing.T) {
	s := newSim(16, 1000, flat(10*time.Millisecond))
	s.run(5 * time.Second)
	if got := s.limit(); got != 16 {
		t.Fatalf("limit %d, want the ceiling 16", got)
	}
	s.l.SetCeiling(5)
	if snap := s.l.Snapshot(); snap.Limit != 5 || snap.Ceiling != 5 || !snap.LastChange.Equal(s.clock.Now()) {
		t.Fatalf("after lowering the ceiling: %+v, want limit and ceiling 5, changed now", snap)
	}
	if c := s.changes[len(s.changes)-1]; c.From != 16 || c.To != 5 || c.Why != Capped {
		t.Fatalf("last change %+v, want 16 to 5, capped", c)
	}
	// Attempts already in flight above the new limit finish; no new one
	// goes out until they are under it.
	s.run(time.Second)
	if s.peak > 16 {
		t.Fatalf("limit reached %d with a ceiling of 16", s.peak)
	}
	if got := s.l.Snapshot().InFlight; got > 5 {
		t.Fatalf("%d in flight under a ceiling of 5", got)
	}
	s.l.SetCeiling(40)
	if got := s.limit(); got != 5 {
		t.Fatalf("raising the ceiling moved the limit to %d, want 5 until answers say more", got)
	}
	s.run(5 * time.Second)
	if got := s.limit(); got != 40 {
		t.Fatalf("limit %d after the ceiling rose to 40, want 40", got)
	}
	s.l.SetCeiling(0)
	if got := s.l.Snapshot(); got.Limit != 1 || got.Ceiling != 1 {
		t.Fatalf("a ceiling of 0 gave %+v, want 1 and 1", got)
	}
}

func TestLimiter_TryAcquireRefusesAtTheLimit(t *testing.T) {
	clock := testkit.NewClock()
	l := NewLimiter(8, clock.Now)
	if !l.TryAcquire() {
		t.Fatal("a new limiter refused its first attempt")
	}
	if l.TryAcquire() {
		t.Fatal("a limit of 1 allowed a second attempt")
	}
	l.Release(Success, time.Millisecond)
	if !l.TryAcquire() {
		t.Fatal("a released room was not given again")
	}
	l.Release(Ignore, 0)
	l.Release(Ignore, 0) // one too many: in flight stays at 0
	if got := l.Snapshot().InFlight; got != 0 {
		t.Fatalf("in flight %d after an extra release, want 0", got)
	}
}

func TestLimiter_ConcurrentUseKeepsTheCount(t *testing.T) {
	clock := testkit.NewClock()
	l := NewLimiter(64, clock.Now)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 2000 {
				if !l.TryAcquire() {
					continue
				}
				if snap := l.Snapshot(); snap.InFlight > snap.Limit && snap.InFlight > 64 {
					t.Errorf("in flight %d over the ceiling", snap.InFlight)
				}
				clock.Advance(time.Duration(r.IntN(1000)) * time.Microsecond)
				l.Release(Outcome(r.IntN(3)), time.Duration(r.IntN(20))*time.Millisecond)
			}
		})
	}
	wg.Wait()
	snap := l.Snapshot()
	if snap.InFlight != 0 || snap.Limit < 1 || snap.Limit > 64 {
		t.Fatalf("after concurrent use: %+v, want nothing in flight and a limit in 1..64", snap)
	}
}

func TestLimiter_JitterDoesNotDriveAFlatReceiverDown(t *testing.T) {
	// 100ms answers with up to 40% jitter (a loaded machine): the limit
	// still carries a demand of 40.
	r := rand.New(rand.NewPCG(7, 7))
	s := newSim(128, 40, func(int) (time.Duration, Outcome) {
		return 100*time.Millisecond + time.Duration(r.IntN(40))*time.Millisecond, Success
	})
	s.run(time.Minute)
	if got := s.limit(); got < 40 {
		t.Fatalf("limit %d for a jittery flat receiver with demand 40, want at least 40", got)
	}
}

func BenchmarkLimiter_AcquireRelease(b *testing.B) {
	l := NewLimiter(64, time.Now)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if l.TryAcquire() {
				l.Release(Success, time.Millisecond)
			}
		}
	})
}

func TestLimiter_ASaturatingReceiverChangesTheLimitRarely(t *testing.T) {
	// Each change is a debug log line: at a steady receiver the limit
	// holds between its re-measures of the best instead of sawing.
	for _, workers := range []int{1, 4} {
		s := newSim(200, 1000, saturating(workers, 10*time.Millisecond))
		s.run(time.Minute)
		n := len(s.changes)
		s.run(2 * time.Minute)
		if got := len(s.changes) - n; got > 2*6 {
			t.Errorf("%d workers: %d changes in 2 steady minutes, want at most 12", workers, got)
		}
	}
}

func TestLimiter_AcquireAndReleaseDoNotAllocate(t *testing.T) {
	clock := testkit.NewClock()
	h := NewHosts(clock.Now, func(Change) {})
	l := h.Get("http://receiver:80", 64)
	allocs := testing.AllocsPerRun(1000, func() {
		l = h.Get("http://receiver:80", 64)
		if l.TryAcquire() {
			clock.Advance(3 * time.Millisecond)
			l.Release(Success, 3*time.Millisecond)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per attempt, want none", allocs)
	}
	if l.Snapshot().Limit < 2 {
		t.Fatal("the limit never moved: the decisions were not exercised")
	}
}

func TestLimiter_BackPressureCountsAcrossACeilingChange(t *testing.T) {
	clock := testkit.NewClock()
	l := NewLimiter(64, clock.Now)
	s := &sim{clock: clock, l: l, demand: func() int { return 1000 }, answer: flat(10 * time.Millisecond)}
	s.run(2 * time.Second)
	from := l.Snapshot().Limit
	for l.TryAcquire() {
	}
	l.Release(Backpressure, time.Second)
	l.SetCeiling(from + 10) // changes nothing of the limit, restarts nothing
	l.SetCeiling(from - 1)  // cuts to from-1 and restarts the window
	clock.Advance(time.Second)
	l.Release(Success, 10*time.Millisecond)
	if got := l.Snapshot().Limit; got > int(float64(from-1)*0.9) {
		t.Fatalf("limit %d after back-pressure answered across a lower ceiling (%d), want cut to 0.9 of it", got, from-1)
	}
}
