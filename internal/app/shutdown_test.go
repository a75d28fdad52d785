package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// Shutting down while a 30 s long poll is open and an attempt is in flight
// (docs/operations.md): dispatch stops claiming first, the poll is answered
// at once (200, empty, its cursor unchanged) while the attempt is still
// running, the attempt finishes and is recorded, and the job that became due
// when it finished is left for the next start: nothing is claimed after the
// stop began.
func TestShutdown_ReleasesLongPollsAndFinishesInFlightWithoutClaiming(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		l := startLive(t, d, testkit.NewClock())

		// The receiver holds the first delivery until told to answer; any
		// later one is answered at once (and counted).
		arrived := make(chan struct{}, 1)
		answer := make(chan struct{})
		var answerOnce sync.Once
		release := func() { answerOnce.Do(func() { close(answer) }) }
		var mu sync.Mutex
		requests := 0
		sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			requests++
			first := requests == 1
			mu.Unlock()
			if first {
				arrived <- struct{}{}
				<-answer
			}
			w.WriteHeader(200)
		}))
		t.Cleanup(sink.Close)
		t.Cleanup(release)                                                                  // runs before the sink closes: a failed test does not hang
		sub := l.subscribe("acme", sink.URL, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", nil) // max in flight 1

		l.produce(ceRecord("acme", "evt-1", ""))
		select {
		case <-arrived:
		case <-time.After(30 * time.Second):
			t.Fatal("the first delivery never arrived")
		}
		// A second event: its job waits behind the first (one in flight at a
		// time) and is due the moment the first is recorded.
		l.produce(ceRecord("acme", "evt-2", ""))
		jobs := func(s store.Store) []hub.Job {
			js, err := s.ListJobs(context.Background(), store.ListJobsParams{TenantID: "acme", SubscriptionID: sub.ID, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			return js
		}
		testkit.WaitFor(t, "the second event's job", func() bool { return len(jobs(l.Store)) == 2 })

		var all pullPage
		if st := l.api("GET", "/v1/events", "acme", "", &all); st != 200 || len(all.Data) != 2 {
			t.Fatalf("events: %d %+v", st, all)
		}
		polled := make(chan pullResult, 1)
		go func() { polled <- longPoll(l, all.NextCursor) }()
		testkit.WaitFor(t, "the long poll to wait", func() bool { return l.Waiters.Holding() == 1 })

		// The safety net is shorter than the poll's 30 s: a poll that holds
		// the shutdown fails the test instead of passing late.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		shutdown := make(chan error, 1)
		go func() { shutdown <- l.Shutdown(ctx) }()

		select {
		case r := <-polled:
			if r.status != 200 || len(r.page.Data) != 0 || r.page.NextCursor != all.NextCursor {
				t.Fatalf("the released long poll answered %d %+v, want 200, no events, cursor %s", r.status, r.page, all.NextCursor)
			}
		case err := <-shutdown:
			t.Fatalf("shutdown returned (%v) before answering the long poll", err)
		case <-ctx.Done():
			t.Fatal("the long poll was not answered while the hub shut down")
		}
		select {
		case err := <-shutdown:
			t.Fatalf("shutdown returned (%v) while an attempt was in flight", err)
		default:
		}

		release() // the receiver answers the attempt in flight
		if err := <-shutdown; err != nil {
			t.Fatalf("shutdown: %v", err)
		}
		mu.Lock()
		n := requests
		mu.Unlock()
		if n != 1 {
			t.Fatalf("the receiver got %d requests: a job was claimed after the stop began", n)
		}

		s, err := app.OpenStore(context.Background(), l.Config.DatabaseURL, store.Options{Now: l.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		byEvent := make(map[string]hub.Job)
		for _, j := range jobs(s) {
			byEvent[j.EventID] = j
		}
		if j := byEvent["evt-1"]; j.Status != hub.JobSucceeded || j.Attempts != 1 {
			t.Fatalf("the attempt in flight was not recorded as succeeded: %+v", j)
		}
		if j := byEvent["evt-2"]; j.Status != hub.JobPending || j.Attempts != 0 {
			t.Fatalf("the job due after the stop began: %+v, want pending and unattempted", j)
		}
	})
}

// longPoll waits up to 30 s for acme's events after cursor; it reports a
// failed request as status 0 (it runs outside the test's goroutine).
func longPoll(l *liveHub, cursor string) pullResult {
	var r pullResult
	req, _ := http.NewRequest("GET", l.URL()+"/v1/events?wait=30s&after="+cursor, nil)
	req.Header.Set("Authorization", "Bearer "+l.Config.AdminToken)
	req.Header.Set("X-Tenant-Id", "acme")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return r
	}
	defer resp.Body.Close()
	r.status = resp.StatusCode
	if err := json.NewDecoder(resp.Body).Decode(&r.page); err != nil {
		r.status = 0
	}
	return r
}
