package dispatch_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A destination that keeps failing: after 5 consecutive failures its
// breaker opens and due jobs are shed (no request, no attempt consumed);
// after 30s one probe goes through; when the destination recovers the
// probe closes the breaker and everything flows again.
func TestBreaker_ShedsWithoutAttemptsThenProbesAndRecovers(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		var breakers *dispatch.Breakers
		r := newRig(t, d, rigOptions{maxInFlight: 10, cfg: func(c *dispatch.Config) {
			var err error
			if breakers, err = dispatch.NewBreakers(config.Defaults(config.Serve).Breaker, c.Now, c.Metrics); err != nil {
				t.Fatal(err)
			}
			c.Breakers = breakers
			c.Workers = 1 // attempts one after another, so "consecutive" is exact
		}})
		r.sink.script(failAlways)
		for i := range 8 {
			r.publish(event("acme", fmt.Sprintf("evt-%d", i)))
		}
		if n := r.step(); n != 8 {
			t.Fatalf("stepped %d", n)
		}
		if got := len(r.sink.got()); got != 5 {
			t.Fatalf("the destination got %d requests, want 5: the breaker opens after 5 consecutive failures", got)
		}
		if s := breakers.State("acme", r.sink.URL); s != dispatch.BreakerOpen {
			t.Fatalf("breaker %s", s)
		}
		jobs, _ := r.store.ListJobs(r.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: r.sub.ID, Limit: 20})
		shed := 0
		for _, j := range jobs {
			if j.Attempts == 0 {
				shed++
				if j.Status != hub.JobPending || j.NextAttemptAt.Before(r.clock.Now().Add(30*time.Second)) {
					t.Fatalf("shed job %+v: want pending, not due before the probe time", j)
				}
			}
		}
		if shed != 3 || testutil.ToFloat64(r.metrics.Shed) != 3 {
			t.Fatalf("%d jobs shed (metric %v), want 3", shed, testutil.ToFloat64(r.metrics.Shed))
		}

		// Within the open period nothing reaches the destination.
		r.clock.Advance(29 * time.Second)
		r.step()
		if got := len(r.sink.got()); got != 5 {
			t.Fatalf("requests while open: %d", got)
		}
		// Half-open: exactly one probe, which fails and reopens for 60s.
		r.clock.Advance(40 * time.Second)
		r.step()
		if got := len(r.sink.got()); got != 6 {
			t.Fatalf("after the open period: %d requests, want the one probe", got)
		}
		if s := breakers.State("acme", r.sink.URL); s != dispatch.BreakerOpen {
			t.Fatalf("after a failed probe: %s", s)
		}
		r.clock.Advance(50 * time.Second)
		r.step()
		if got := len(r.sink.got()); got != 6 {
			t.Fatalf("the reopened breaker (60s) let %d through at 50s", got-6)
		}

		// The destination recovers: the next probe succeeds and closes it.
		r.sink.script(func(int, *http.Request) (int, http.Header, string) { return 200, nil, "ok" })
		for range 20 {
			r.clock.Advance(time.Minute)
			r.step()
		}
		if s := breakers.State("acme", r.sink.URL); s != dispatch.BreakerClosed {
			t.Fatalf("after recovery: %s", s)
		}
		jobs, _ = r.store.ListJobs(r.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: r.sub.ID, Limit: 20})
		for _, j := range jobs {
			if j.Status != hub.JobSucceeded {
				t.Fatalf("after recovery: %+v", j)
			}
			// 5 failures before it opened + the failed probe + successes:
			// a shed never consumed an attempt.
			if j.Attempts > 3 {
				t.Fatalf("job %s used %d attempts", j.EventID, j.Attempts)
			}
		}
	})
}

// autoDisableRig fails (or succeeds) at chosen instants: each call steps
// the dispatcher at t0+h hours with a fresh event, as auto-disable's gates are
// about time, not counts.
type autoDisableRig struct {
	*rig
	t0 time.Time
	n  int
}

func newAutoDisableRig(t *testing.T, d testkit.Driver, killSwitchOff bool) *autoDisableRig {
	r := newRig(t, d, rigOptions{retrySchedule: []string{"1s"}, cfg: func(c *dispatch.Config) {
		if !killSwitchOff {
			g := config.Defaults(config.Serve).Autodisable // 120h, spread over 12h
			c.AutoDisable = &store.AutoDisable{Window: g.FailureWindow, Spread: g.FailureSpread}
		}
	}})
	return &autoDisableRig{rig: r, t0: r.clock.Now()}
}

// at steps at t0+h with a fresh event, the destination answering status.
func (a *autoDisableRig) at(h float64, status int) {
	a.t.Helper()
	a.clock.Set(a.t0.Add(time.Duration(h * float64(time.Hour))))
	a.sink.script(func(int, *http.Request) (int, http.Header, string) { return status, nil, "" })
	a.n++
	a.publish(event("acme", fmt.Sprintf("evt-%d", a.n)))
	for a.step() > 0 {
	}
}

// check runs maintenance at t0+h and reports whether the subscription is
// disabled.
func (a *autoDisableRig) disabledAt(h float64) bool {
	a.t.Helper()
	a.clock.Set(a.t0.Add(time.Duration(h * float64(time.Hour))))
	if err := a.d.Maintain(a.ctx); err != nil {
		a.t.Fatal(err)
	}
	s, err := a.store.GetSubscription(a.ctx, "acme", a.sub.ID)
	if err != nil {
		a.t.Fatal(err)
	}
	if !s.Enabled && s.VerificationState != hub.VerificationActive {
		a.t.Fatalf("auto-disable touched verification_state: %+v", s)
	}
	return !s.Enabled
}

func TestAutoDisable_Gates(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		t.Run("119h sustained: no", func(t *testing.T) {
			a := newAutoDisableRig(t, d, false)
			a.at(0, 500)
			a.at(119, 500) // spread 119h, sustained 119h
			if a.disabledAt(119) {
				t.Fatal("disabled at 119h")
			}
		})
		t.Run("120h sustained with 11h spread: no", func(t *testing.T) {
			a := newAutoDisableRig(t, d, false)
			a.at(0, 500)
			a.at(11, 500) // then silence: no more failures
			if a.disabledAt(120) || a.disabledAt(130) {
				t.Fatal("disabled with an 11h spread")
			}
		})
		t.Run("both gates met: yes", func(t *testing.T) {
			a := newAutoDisableRig(t, d, false)
			a.at(0, 500)
			a.at(12, 503)
			a.publish(event("acme", "waiting")) // a job still waiting when it fires
			if a.disabledAt(119.9) {
				t.Fatal("disabled before 120h")
			}
			if !a.disabledAt(120) {
				t.Fatal("not disabled at 120h sustained with a 12h spread")
			}
			s, _ := a.store.GetSubscription(a.ctx, "acme", a.sub.ID)
			if s.DisabledAt == nil || !s.DisabledAt.Equal(a.clock.Now()) ||
				s.DisabledReason != "auto-disabled: failing since 2026-11-30T12:00:00Z, last failure 2026-12-01T00:00:00Z" {
				t.Fatalf("subscription = %+v", s)
			}
			jobs, _ := a.store.ListJobs(a.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: a.sub.ID, Status: hub.JobDeadLettered, Limit: 10})
			found := false
			for _, j := range jobs {
				found = found || j.EventID == "waiting" && j.DeadLetterReason == hub.DeadLetterSubscriptionDisabled
			}
			if !found {
				t.Fatalf("the waiting job was not dead-lettered as subscription_disabled: %+v", jobs)
			}
			if got := testutil.ToFloat64(a.metrics.AutoDisables); got != 1 {
				t.Fatalf("auto-disables metric = %v", got)
			}
			// Delivery stops: a new event makes no job.
			res, _ := a.store.Ingest(a.ctx, store.IngestParams{Events: []hub.Event{event("acme", "after")}})
			if res.Jobs != 0 {
				t.Fatal("a disabled subscription still matches")
			}
		})
		t.Run("fires at a failed attempt too", func(t *testing.T) {
			a := newAutoDisableRig(t, d, false)
			a.at(0, 500)
			a.at(120, 500) // the completion of this failure checks the gates
			s, _ := a.store.GetSubscription(a.ctx, "acme", a.sub.ID)
			if s.Enabled {
				t.Fatal("not disabled by the failure that met both gates")
			}
		})
		t.Run("a success at 100h clears the span: no", func(t *testing.T) {
			a := newAutoDisableRig(t, d, false)
			a.at(0, 500)
			a.at(50, 500)
			a.at(100, 200)
			s, _ := a.store.GetSubscription(a.ctx, "acme", a.sub.ID)
			if s.FailureSpan != nil {
				t.Fatalf("a success left span %+v", s.FailureSpan)
			}
			a.at(110, 500)
			if a.disabledAt(125) {
				t.Fatal("failures before the success counted")
			}
			// The new span (from 110h) is sustained at 230h, but its
			// failures are seconds apart: the spread gate holds it.
			if a.disabledAt(240) {
				t.Fatal("a span without spread was disabled")
			}
		})
		t.Run("kill switch off: no", func(t *testing.T) {
			a := newAutoDisableRig(t, d, true)
			a.at(0, 500)
			a.at(60, 500)
			a.at(130, 500)
			if a.disabledAt(200) {
				t.Fatal("disabled with STREAMING_HUB_AUTODISABLE_ENABLED=false")
			}
		})
	})
}
