package dispatch

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestBreaker_OpensShedsProbesClosesAndDoubles(t *testing.T) {
	clock := testkit.NewClock()
	m := metrics.New()
	b, err := NewBreakers(config.Defaults(config.Serve).Breaker, clock.Now, m)
	if err != nil {
		t.Fatal(err)
	}
	const tenant, url = "acme", "https://hooks.acme.example/in"
	allow := func() bool {
		ok, retryAt := b.Allow(tenant, url)
		if !ok && retryAt.Before(clock.Now()) {
			t.Fatalf("shed to %v, in the past", retryAt)
		}
		return ok
	}

	for i := 1; i <= 4; i++ {
		if !allow() {
			t.Fatalf("failure %d: closed breaker shed", i)
		}
		b.Record(tenant, url, false)
	}
	if b.State(tenant, url) != BreakerClosed {
		t.Fatal("opened before 5 consecutive failures")
	}
	b.Record(tenant, url, true) // a success resets the count
	for range 4 {
		b.Record(tenant, url, false)
	}
	if b.State(tenant, url) != BreakerClosed {
		t.Fatal("a success did not reset the consecutive count")
	}
	b.Record(tenant, url, false) // the fifth in a row
	if b.State(tenant, url) != BreakerOpen {
		t.Fatalf("state %s after 5 consecutive failures", b.State(tenant, url))
	}
	ok, retryAt := b.Allow(tenant, url)
	if ok || retryAt.Before(clock.Now().Add(30*time.Second)) || retryAt.After(clock.Now().Add(30*time.Second+8*time.Second)) {
		t.Fatalf("open: allowed=%v retry at %v, want shed to 30s plus jitter", ok, retryAt.Sub(clock.Now()))
	}
	if !b.Blocked(tenant, url) || b.Blocked(tenant, "https://other.example") || b.Blocked("globex", url) {
		t.Fatal("blocking is per (tenant, destination)")
	}

	// Doubling: each failed probe reopens for twice as long, up to 10m.
	for _, openFor := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute} {
		clock.Advance(openFor - time.Millisecond)
		if allow() {
			t.Fatalf("allowed before the %v open period ended", openFor)
		}
		clock.Advance(time.Millisecond)
		if b.State(tenant, url) != BreakerHalfOpen {
			t.Fatalf("state %s when the %v open period ended", b.State(tenant, url), openFor)
		}
		if !allow() {
			t.Fatalf("no probe after %v", openFor)
		}
		if allow() {
			t.Fatal("a second attempt went through while the probe is under way")
		}
		b.Record(tenant, url, false)
	}
	clock.Advance(10 * time.Minute)
	if !allow() {
		t.Fatal("no probe")
	}
	b.Record(tenant, url, true)
	if b.State(tenant, url) != BreakerClosed || !allow() || !allow() {
		t.Fatal("a successful probe did not close the breaker")
	}
	if got := testutil.ToFloat64(m.BreakerChanges.WithLabelValues("open")); got != 8 {
		t.Fatalf("open transitions = %v, want 8 (1 + 7 failed probes)", got)
	}
	if got := testutil.ToFloat64(m.BreakersOpen); got != 0 {
		t.Fatalf("breakers open gauge = %v after closing", got)
	}
}
