package console_test

import (
	"context"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	hubpkg "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A pending delivery's page says why it waits: held by the breaker until
// its next attempt, waiting for the breaker's half-open probe, or due and
// waiting for a claim behind its ordered subscription's earlier deliveries.
func TestDelivery_SaysWhyAPendingDeliveryWaits(t *testing.T) {
	var breaker atomic.Value
	breaker.Store("closed")
	h := newHub(t, testkit.Drivers[1], options{breakerState: func(string, string) string { return breaker.Load().(string) }})
	key := h.tenant("acme")
	h.subscription("acme", "hooks", receiver(t, "ok").URL)
	h.ingest(storetest.NewEvent("acme", "evt-1"))
	job := h.jobOf("acme", "evt-1")
	// One failed attempt: the job waits for its retry, due in a minute.
	ctx := context.Background()
	cs, err := h.store.ClaimJobs(ctx, store.ClaimParams{Batch: 1, Lease: time.Minute})
	if err != nil || len(cs) != 1 {
		t.Fatalf("claimed %d, %v", len(cs), err)
	}
	now := h.clock.Now()
	if _, err := h.store.CompleteJobs(ctx, store.CompleteParams{Completions: []store.Completion{{
		JobLease: store.JobLease{JobID: job, LeaseToken: cs[0].LeaseToken}, Status: hubpkg.JobPending, NextAttemptAt: now.Add(time.Minute),
		SubscriptionID: cs[0].Job.SubscriptionID, LastError: "destination answered 503",
		Attempt: &hubpkg.Attempt{ID: hubpkg.NewID("att", now), StartedAt: now, StatusCode: 503, Error: "destination answered 503"}}}}); err != nil {
		t.Fatal(err)
	}
	b := h.signIn(key)
	hold := regexp.MustCompile(`<p class="hold" id="hold" role="status">(.*?)</p>`)
	text := func() string {
		t.Helper()
		got := b.get("/console/deliveries/" + job)
		if got.status != 200 {
			t.Fatalf("delivery page: %d", got.status)
		}
		m := hold.FindStringSubmatch(got.body)
		if m == nil {
			return ""
		}
		return regexp.MustCompile(`<[^>]+>`).ReplaceAllString(m[1], "")
	}
	if got := text(); got != "" {
		t.Errorf("a retry due in a minute, breaker closed: %q, want nothing said", got)
	}
	breaker.Store("open")
	if got := text(); !strings.HasPrefix(got, "Held by the breaker until in 1 min · ") || !strings.Contains(got, "one probe attempt goes through") {
		t.Errorf("breaker open: %q", got)
	}
	breaker.Store("half_open")
	if got := text(); !strings.HasPrefix(got, "Waiting for the breaker's half-open probe: ") {
		t.Errorf("breaker half-open: %q", got)
	}
	breaker.Store("closed")
	h.clock.Advance(2 * time.Minute)
	if got := text(); got != "Due 1 min ago: it goes out with the next claim, after this subscription's earlier deliveries (it sends one at a time, in arrival order)." {
		t.Errorf("due a minute ago, breaker closed: %q", got)
	}
}

// A subscription's page says how many attempts its receiver host takes at
// once from this process and how fast it answers lately
// (docs/delivery.md, "Concurrency that follows the receiver"); a process
// that does not deliver says nothing of it.
func TestSubscription_ShowsItsHostsLimitAndLatency(t *testing.T) {
	var known atomic.Bool
	h := newHub(t, testkit.Drivers[1], options{destinationLimit: func(string) (api.DestinationLimit, bool) {
		return api.DestinationLimit{Limit: 12, InFlight: 3, Ceiling: 64, RecentLatency: 104 * time.Millisecond,
			BestLatency: 98 * time.Millisecond}, known.Load()
	}})
	key := h.tenant("acme")
	id := h.subscription("acme", "hooks", receiver(t, "ok").URL)
	b := h.signIn(key)
	page := func() string {
		got := b.get("/console/subscriptions/" + id)
		if got.status != 200 {
			t.Fatalf("subscription page: %d", got.status)
		}
		return regexp.MustCompile(`<[^>]+>`).ReplaceAllString(got.body, "")
	}
	if body := page(); strings.Contains(body, "attempts at once") {
		t.Fatal("a host this process has not sent to lately has a limit on the page")
	}
	known.Store(true)
	body := page()
	for _, want := range []string{"takes up to 12 attempts at once from this process (3 now, at most 64)", "answering in 104 ms lately", "(best 98 ms)"} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}
