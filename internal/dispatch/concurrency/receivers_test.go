package concurrency

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// These tests send real HTTP requests to real servers on loopback, each
// through a limiter on the real clock, the way the dispatcher does: an
// attempt waits until the limiter has room, is sent with net/http, and
// gives its room back with its outcome. They assert directions and wide
// bands, never durations: a loaded machine makes everything slower, and a
// limit that follows the receiver follows that too.

// driver offers attempts to one receiver through a limiter: open loop (a
// rate of arrivals that wait for room) or closed loop (always one more
// waiting, or as many as keep a given number in flight).
type driver struct {
	lim     *Limiter
	client  *http.Client
	url     string
	timeout time.Duration // an attempt's deadline; set before sending

	mu       sync.Mutex
	waiting  int  // arrivals waiting for room
	endless  bool // closed loop: always one more waiting...
	most     int  // ...while fewer than this are in flight (0: no bound)
	active   int  // attempts in flight
	offered  int
	done     int
	outcomes [3]int
	peak     int           // the highest limit seen
	slowest  time.Duration // the highest recent latency seen
	samples  int           // samples of the in-flight count
	inFlight int           // their sum

	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
	flying  sync.WaitGroup
}

func newDriver(t *testing.T, lim *Limiter, url string) *driver {
	d := &driver{
		lim: lim, url: url, timeout: 10 * time.Second,
		client:  &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}},
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	go d.launch()
	t.Cleanup(func() {
		d.halt()
		d.client.CloseIdleConnections()
	})
	return d
}

func (d *driver) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// launch sends waiting attempts as the limiter gives room.
func (d *driver) launch() {
	defer close(d.stopped)
	for {
		for {
			d.mu.Lock()
			want := d.waiting > 0 || d.endless && (d.most == 0 || d.active < d.most)
			d.mu.Unlock()
			if !want || !d.lim.TryAcquire() {
				break
			}
			d.mu.Lock()
			if !d.endless {
				d.waiting--
			}
			d.active++
			d.mu.Unlock()
			d.flying.Add(1)
			go d.send()
		}
		select {
		case <-d.wake:
		case <-d.stop:
			return
		}
	}
}

// send makes one attempt and releases its room with its outcome.
func (d *driver) send() {
	defer d.flying.Done()
	ctx, cancel := context.WithTimeout(context.Background(), d.timeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.url, nil)
	start := time.Now()
	resp, err := d.client.Do(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	o := OutcomeOf(status, err)
	d.lim.Release(o, time.Since(start))
	d.mu.Lock()
	d.active--
	d.done++
	d.outcomes[o]++
	d.mu.Unlock()
	d.signal()
}

// offer adds arrivals at rate per second (the count keeps to the rate
// even when this goroutine is late), sampling the limiter as it goes,
// until it has added n or stop is closed. It returns how many it added.
func (d *driver) offer(rate float64, n int, stop <-chan struct{}) int {
	start := time.Now()
	sent := 0
	for sent < n {
		due := min(n, int(time.Since(start).Seconds()*rate)+1)
		d.mu.Lock()
		d.waiting += due - sent
		d.offered += due - sent
		d.mu.Unlock()
		sent = due
		d.signal()
		d.sample()
		select {
		case <-stop:
			return sent
		case <-time.After(2 * time.Millisecond):
		}
	}
	return sent
}

// sample records the limiter's limit and in-flight count.
func (d *driver) sample() Snapshot {
	s := d.lim.Snapshot()
	d.mu.Lock()
	d.peak = max(d.peak, s.Limit)
	d.slowest = max(d.slowest, s.RecentLatency)
	d.samples++
	d.inFlight += s.InFlight
	d.mu.Unlock()
	return s
}

// closedLoop keeps one attempt waiting at all times, until halted; with
// most above 0, only while fewer than most are in flight.
func (d *driver) closedLoop(most int) {
	d.mu.Lock()
	d.endless, d.most = true, most
	d.mu.Unlock()
	d.signal()
}

// halt stops sending and waits for the attempts in flight.
func (d *driver) halt() {
	select {
	case <-d.stop:
	default:
		close(d.stop)
	}
	<-d.stopped
	d.flying.Wait()
}

// waitFor polls cond, sampling the limiter, until it holds.
func (d *driver) waitFor(t *testing.T, what string, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	var s Snapshot
	testkit.WaitFor(t, what, func() bool {
		s = d.sample()
		return cond(s)
	})
	return s
}

func (d *driver) counts() (offered, done, waiting int, outcomes [3]int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.offered, d.done, d.waiting, d.outcomes
}

// sleepy answers 204 after d.
func sleepy(d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(d)
		w.WriteHeader(http.StatusNoContent)
	})
}

func TestReceivers_AnInstantReceiverGetsFewAttemptsAndAllItsLoad(t *testing.T) {
	testkit.Long(t)
	srv := httptest.NewServer(sleepy(0))
	defer srv.Close()
	lim := NewLimiter(64, time.Now)
	d := newDriver(t, lim, srv.URL)

	const n = 600
	d.offer(200, n, nil)
	testkit.WaitFor(t, "every attempt answered", func() bool {
		_, done, _, _ := d.counts()
		return done == n
	})
	d.halt()
	_, _, _, outcomes := d.counts()
	if outcomes[Success] != n {
		t.Fatalf("outcomes %v, want %d successes", outcomes, n)
	}
	// An answer at once needs well under one attempt in flight at 200/s:
	// the limit has no reason to grow past a few. (On a starved machine
	// nothing answers at once: the bound is then four times what the load
	// needs at the slowest latency seen.)
	if most := max(8, int(math.Ceil(4*200*d.slowest.Seconds()))); d.peak > most {
		t.Fatalf("the limit reached %d for a receiver answering at once (slowest latency %v), want at most %d", d.peak, d.slowest, most)
	}
	// The limit did not hold the load back: on average the attempts in
	// flight used under half of it.
	if avg := float64(d.inFlight) / float64(d.samples); avg > float64(lim.Snapshot().Limit)/2 {
		t.Fatalf("on average %.2f attempts in flight for a limit of %d: the limit held the load back", avg, lim.Snapshot().Limit)
	}
	t.Logf("limit %+v, peak %d, slowest %v, average in flight %.2f", lim.Snapshot(), d.peak, d.slowest, float64(d.inFlight)/float64(d.samples))
}

func TestReceivers_ASlowReceiverGetsTheAttemptsItsLoadNeeds(t *testing.T) {
	testkit.Long(t)
	// 100ms answers, and attempts enough to keep 40 in flight: 400 a
	// second while the receiver keeps to its 100ms.
	srv := httptest.NewServer(sleepy(100 * time.Millisecond))
	defer srv.Close()
	lim := NewLimiter(128, time.Now)
	d := newDriver(t, lim, srv.URL)
	d.closedLoop(40)
	s := d.waitFor(t, "the limit to grow to 40", func(s Snapshot) bool { return s.Limit >= 40 })
	t.Logf("grown: %+v", s)
	// Past 40 the limit is never full: no more growth.
	_, grown, _, _ := d.counts()
	testkit.WaitFor(t, "two more seconds' worth of answers", func() bool {
		d.sample()
		_, done, _, _ := d.counts()
		return done >= grown+800
	})
	d.halt()
	s = lim.Snapshot()
	if s.Limit < 40 || s.Limit > 40+7 || d.peak > 40+7 {
		t.Fatalf("limit %d (peak %d) for 40 wanted in flight, want 40 and at most one step more (47)", s.Limit, d.peak)
	}
	if _, _, _, outcomes := d.counts(); outcomes[Success] == 0 || outcomes[Backpressure] != 0 {
		t.Fatalf("outcomes %v, want successes only", outcomes)
	}
	if s.BestLatency < 100*time.Millisecond || s.RecentLatency < 100*time.Millisecond {
		t.Fatalf("latencies %v recent, %v best for a receiver of 100ms, want at least 100ms", s.RecentLatency, s.BestLatency)
	}
	t.Logf("end: %+v, peak %d", s, d.peak)
}

// workers answers after service, with at most n requests served at once:
// the rest queue, so latency grows with the requests in flight (with n 1,
// latency is service times the requests in flight).
func workers(n int, service time.Duration) http.Handler {
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case slots <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		time.Sleep(service)
		<-slots
		w.WriteHeader(http.StatusNoContent)
	})
}

func TestReceivers_ASaturatingReceiverIsHeldNearItsKnee(t *testing.T) {
	testkit.Long(t)
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d workers", n), func(t *testing.T) {
			// 10ms per request, n at a time, and as many attempts as the
			// limiter allows: at the ceiling of 200 with 4 workers latency
			// would be 500ms (with 1, two seconds).
			srv := httptest.NewServer(workers(n, 10*time.Millisecond))
			defer srv.Close()
			lim := NewLimiter(200, time.Now)
			d := newDriver(t, lim, srv.URL)
			d.closedLoop(0)
			// 5 seconds' worth of answers, 500 or more.
			testkit.WaitFor(t, "answers", func() bool {
				d.sample()
				_, done, _, _ := d.counts()
				return done >= 500*n
			})
			d.halt()
			s := lim.Snapshot()
			t.Logf("%d workers: %+v, peak %d", n, s, d.peak)
			// With at most 8n in flight, a request waits behind at most 8
			// rounds of the receiver's work (80ms), not the 200/n rounds
			// of the ceiling.
			if s.Limit < 1 || s.Limit > 8*n || d.peak > 12*n {
				t.Fatalf("%d workers: limit %d (peak %d), want held near %d, at most %d (peak %d)", n, s.Limit, d.peak, n, 8*n, 12*n)
			}
		})
	}
}

// How a receiver answers, for refusing.
const (
	healthy int32 = iota // 204 after 20ms
	refuses              // 503 and 429 by turns, at once
	hangs                // nothing, until the attempt gives up
	closes               // closes the connection without an answer
)

// refusing answers as mode says.
func refusing(mode *atomic.Int32) http.Handler {
	var turn atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch mode.Load() {
		case refuses:
			if turn.Add(1)%2 == 0 {
				w.WriteHeader(http.StatusTooManyRequests)
			} else {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		case hangs:
			<-r.Context().Done()
		case closes:
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		default:
			time.Sleep(20 * time.Millisecond)
			w.WriteHeader(http.StatusNoContent)
		}
	})
}

func TestReceivers_BackPressureCutsTheLimitAndItRecoversAfter(t *testing.T) {
	testkit.Long(t)
	for name, bad := range map[string]int32{"429 and 503": refuses, "timeouts": hangs, "closed connections": closes} {
		t.Run(name, func(t *testing.T) {
			var mode atomic.Int32
			srv := httptest.NewServer(refusing(&mode))
			defer srv.Close()
			var mu sync.Mutex
			var changes []Change
			hosts := NewHosts(time.Now, func(c Change) {
				mu.Lock()
				changes = append(changes, c)
				mu.Unlock()
			})
			lim := hosts.Get(srv.URL, 32)
			d := newDriver(t, lim, srv.URL)
			d.timeout = time.Second
			d.closedLoop(0)

			d.waitFor(t, "the limit to grow", func(s Snapshot) bool { return s.Limit >= 16 })
			mu.Lock()
			changes = nil
			mu.Unlock()
			mode.Store(bad)
			d.waitFor(t, "the limit to fall under 4", func(s Snapshot) bool { return s.Limit < 4 })
			mu.Lock()
			backPressure := 0
			for _, c := range changes {
				if c.To > c.From {
					continue // growth from answers to attempts sent before
				}
				// A slow answer sent before may cut for latency; every cut
				// is to 0.9 or less.
				if c.Why == BackPressure {
					backPressure++
				}
				if (c.Why != BackPressure && c.Why != Slowed) || float64(c.To) > math.Max(1, math.Floor(float64(c.From)*0.9)) {
					t.Errorf("a cut from %d to %d (%s) under %s, want to 0.9 or less", c.From, c.To, c.Why, name)
				}
			}
			mu.Unlock()
			if backPressure == 0 {
				t.Errorf("no cut for back-pressure under %s", name)
			}
			mode.Store(healthy)
			d.waitFor(t, "the limit to recover", func(s Snapshot) bool { return s.Limit >= 16 })
			d.halt()
			if s := lim.Snapshot(); s.Limit > 32 || d.peak > 32 {
				t.Fatalf("limit %d, peak %d over the ceiling 32", s.Limit, d.peak)
			}
			if _, _, _, outcomes := d.counts(); outcomes[Backpressure] == 0 || outcomes[Success] == 0 {
				t.Fatalf("outcomes %v, want both successes and back-pressure", outcomes)
			}
		})
	}
}
