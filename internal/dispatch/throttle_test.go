package dispatch_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A subscription with rate_limit.per_second 5 receives 5 deliveries per
// second of the (fake) clock, in order, while another subscription of the
// same tenant receives everything at once; the throttled jobs wait without
// an attempt, and nothing fails or is dead-lettered because of it.
func TestRateLimit_ReceivesAtItsLimitWhileAnotherIsUnthrottled(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		limited := r.sub
		limited.RateLimit = 5
		var err error
		if limited, err = r.store.UpdateSubscription(r.ctx, limited); err != nil {
			t.Fatal(err)
		}
		free := newSink(t)
		freeSub := r.subscribe("acme", "sub_free", free.URL, rigOptions{})
		const n = 20
		var evs []hub.Event
		for i := range n {
			evs = append(evs, event("acme", fmt.Sprintf("evt-%02d", i)))
		}
		r.publish(evs...)
		r.run()

		testkit.WaitFor(t, "every event at the unthrottled subscription", func() bool { return len(free.got()) == n })
		throttled := func() float64 { return testutil.ToFloat64(r.metrics.Throttled) }
		refused := 0.0 // every waiting job is refused once per second of the clock
		for second := 1; second*5 <= n; second++ {
			want := second * 5
			refused += float64(n - want)
			// Every job still waiting has been refused its token: what
			// arrived by now is all this second allows.
			testkit.WaitFor(t, fmt.Sprintf("%d deliveries and the rest throttled", want), func() bool {
				return len(r.sink.got()) >= want && throttled() >= refused
			})
			if got := len(r.sink.got()); got != want {
				t.Fatalf("after %d s of the clock the limited subscription received %d, want %d", second-1, got, want)
			}
			r.clock.Advance(time.Second)
		}
		for i, req := range r.sink.got() {
			if id := req.header.Get("X-Lerian-Event-Id"); id != evs[i].ID {
				t.Fatalf("delivery %d is %s, want %s: throttling broke arrival order", i, id, evs[i].ID)
			}
		}
		for _, sub := range []string{limited.ID, freeSub.ID} {
			testkit.WaitFor(t, "every job of "+sub+" succeeded", func() bool {
				for _, j := range r.jobsOf("acme", sub) {
					if j.Status != hub.JobSucceeded {
						return false
					}
				}
				return true
			})
			for _, j := range r.jobsOf("acme", sub) {
				if j.Attempts != 1 {
					t.Fatalf("job %s of %s made %d attempts, want 1: waiting for a token is not an attempt", j.ID, sub, j.Attempts)
				}
			}
		}
		if f := len(free.got()); f != n {
			t.Fatalf("unthrottled subscription received %d, want %d", f, n)
		}
	})
}
