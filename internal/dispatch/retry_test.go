package dispatch_test

import (
	"net/http"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func failAlways(int, *http.Request) (int, http.Header, string) { return 500, nil, "boom" }

// timeline drives one job through every attempt against a failing sink and
// returns the waits before each retry.
func (r *rig) timeline(maxAttempts int) (waits []time.Duration, job hub.Job) {
	r.t.Helper()
	for attempt := 1; attempt <= maxAttempts; attempt++ {
		if n := r.step(); n != 1 {
			r.t.Fatalf("attempt %d: stepped %d jobs", attempt, n)
		}
		j, _ := r.onlyJob()
		if j.Status != hub.JobPending {
			return waits, j
		}
		wait := j.NextAttemptAt.Sub(r.clock.Now())
		waits = append(waits, wait)
		r.clock.Advance(wait - time.Millisecond)
		if n := r.step(); n != 0 {
			r.t.Fatalf("attempt %d: the retry ran %v early", attempt+1, time.Millisecond)
		}
		r.clock.Advance(time.Millisecond)
	}
	j, _ := r.onlyJob()
	return waits, j
}

func TestRetry_DefaultCurveWithFullJitterThenExhausted(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		r.sink.script(failAlways)
		r.publish(event("acme", "evt-1"))
		waits, j := r.timeline(20)
		if len(waits) != 8 {
			t.Fatalf("%d retries, want 8 (1 + 8 attempts); waits %s", len(waits), fmtDurations(waits))
		}
		differs := false
		for i, w := range waits {
			step := hub.DefaultRetrySchedule[i]
			if w < time.Second || w > step {
				t.Errorf("wait before retry %d = %v, want within [1s, %v]", i+1, w, step)
			}
			differs = differs || w != step
		}
		if !differs {
			t.Error("every wait equals its step: no jitter")
		}
		if j.Status != hub.JobDeadLettered || j.DeadLetterReason != hub.DeadLetterExhausted || j.Attempts != 9 || j.LastError != "destination answered 500" {
			t.Fatalf("job after the curve = %+v", j)
		}
		_, attempts := r.onlyJob()
		got := r.sink.got()
		if len(attempts) != 9 || len(got) != 9 {
			t.Fatalf("%d attempts logged, %d requests received; want 9 and 9", len(attempts), len(got))
		}
		ids := map[string]bool{}
		for i, a := range attempts {
			if a.StatusCode != 500 || a.ResponseBody != "boom" || a.Error != "destination answered 500" {
				t.Fatalf("attempt %d = %+v", i, a)
			}
			ids[a.ID] = true
			if got[i].header.Get("X-Lerian-Delivery-Id") != a.ID || got[i].header.Get("X-Lerian-Event-Id") != "evt-1" {
				t.Fatalf("request %d: delivery id %q event id %q, attempt %s", i, got[i].header.Get("X-Lerian-Delivery-Id"), got[i].header.Get("X-Lerian-Event-Id"), a.ID)
			}
		}
		if len(ids) != 9 {
			t.Fatal("delivery ids repeat across attempts")
		}
		if n := r.step(); n != 0 {
			t.Fatal("a dead letter was claimed")
		}
	})
}

func TestRetry_FailsTwiceThenSucceedsWithThreeDeliveryIDs(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		r.sink.script(func(n int, _ *http.Request) (int, http.Header, string) {
			if n <= 2 {
				return 503, nil, "busy"
			}
			return 204, nil, ""
		})
		r.publish(event("acme", "evt-1"))
		_, j := r.timeline(5)
		if j.Status != hub.JobSucceeded || j.Attempts != 3 || j.CompletedAt == nil {
			t.Fatalf("job = %+v", j)
		}
		got := r.sink.got()
		seen := map[string]bool{}
		for _, g := range got {
			seen[g.header.Get("X-Lerian-Delivery-Id")] = true
			if g.header.Get("X-Lerian-Event-Id") != "evt-1" {
				t.Fatal("the event id changed across attempts")
			}
		}
		if len(got) != 3 || len(seen) != 3 {
			t.Fatalf("%d requests with %d distinct delivery ids, want 3 and 3", len(got), len(seen))
		}
	})
}

func TestRetry_SubscriptionCurveOverride(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{retrySchedule: []string{"2s", "3m"}})
		r.sink.script(failAlways)
		r.publish(event("acme", "evt-1"))
		waits, j := r.timeline(10)
		if len(waits) != 2 || waits[0] < time.Second || waits[0] > 2*time.Second || waits[1] < time.Second || waits[1] > 3*time.Minute {
			t.Fatalf("waits %s, want two within [1s,2s] and [1s,3m]", fmtDurations(waits))
		}
		if j.Status != hub.JobDeadLettered || j.Attempts != 3 {
			t.Fatalf("two steps give three attempts: %+v", j)
		}
	})
}

func TestRetry_MalformedOverrideFallsBackToTheDefaultCurve(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		// Old or hand-edited data the API would refuse.
		r := newRig(t, d, rigOptions{retrySchedule: []string{"soon", "0s"}})
		r.sink.script(failAlways)
		r.publish(event("acme", "evt-1"))
		waits, j := r.timeline(20)
		if len(waits) != 8 || j.Attempts != 9 || j.Status != hub.JobDeadLettered {
			t.Fatalf("waits %s, job %+v: want the default curve's 8 retries", fmtDurations(waits), j)
		}
		if waits[1] > time.Minute || waits[7] > 10*time.Hour {
			t.Fatalf("waits %s exceed the default curve", fmtDurations(waits))
		}
	})
}

func TestRetry_RetryAfterOn429And503(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		cases := []struct {
			status     int
			retryAfter string
			minW, maxW time.Duration
		}{
			{429, "120", 120 * time.Second, 120 * time.Second},
			{503, "", time.Second, 5 * time.Second},                // no header: the curve
			{500, "3600", time.Second, 5 * time.Second},            // only 429 and 503 are honoured
			{429, "999999", 10 * time.Hour, 10 * time.Hour},        // capped at 10h
			{503, "http-date", 90 * time.Second, 90 * time.Second}, // an HTTP date
			{429, "1", time.Second, 5 * time.Second},               // never sooner than the curve's draw
		}
		for i, c := range cases {
			ra := c.retryAfter
			if ra == "http-date" {
				ra = r.clock.Now().Add(90 * time.Second).Format(http.TimeFormat)
			}
			r.sink.script(func(int, *http.Request) (int, http.Header, string) {
				h := http.Header{}
				if ra != "" {
					h.Set("Retry-After", ra)
				}
				return c.status, h, ""
			})
			ev := event("acme", "evt-ra")
			ev.ID = ev.ID + string(rune('a'+i))
			r.publish(ev)
			if n := r.step(); n != 1 {
				t.Fatalf("case %d: stepped %d", i, n)
			}
			jobs, _ := r.store.ListJobs(r.ctx, listParams(r))
			wait := jobs[0].NextAttemptAt.Sub(r.clock.Now())
			if wait < c.minW || wait > c.maxW {
				t.Errorf("%d with Retry-After %q: next attempt in %v, want within [%v, %v]", c.status, c.retryAfter, wait, c.minW, c.maxW)
			}
			// A fresh subscription for the next case: deleting this one
			// dead-letters its waiting job.
			r.store.DeleteSubscription(r.ctx, "acme", r.sub.ID)
			r.sub = r.subscribe("acme", r.sub.ID+"x", r.sink.URL, rigOptions{})
		}
	})
}
