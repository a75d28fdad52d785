package storetest

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func testAttempts(t *testing.T, open Opener) {
	t.Run("ReplayMarks", func(t *testing.T) { testReplayMarks(t, open) })
	t.Run("HeadersRoundTrip", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 5)
		e.publish(t, "acme", "e", 3)
		cs := e.claim(t, 3)
		sort.Slice(cs, func(i, j int) bool { return cs[i].Job.EventSequence < cs[j].Job.EventSequence })

		sent := map[string]string{"Content-Type": "application/json", "Webhook-Signature": "v1,abc=",
			"Authorization": hub.Redacted, "X-Lerian-Tenant-Id": "acme"}
		answer := map[string]string{"X-Receiver": "r1", "Set-Cookie": "a=1, b=2"}
		withHeaders := e.succeeded(cs[0])
		withHeaders.Attempt.RequestHeaders, withHeaders.Attempt.ResponseHeaders = sent, answer

		// What a receiver can put in its headers is bounded and cleaned
		// by the store too: 40 headers keep the first 32 by name, a long value is cut, a
		// NUL or invalid byte is made storable.
		flood := map[string]string{"X-Bad": "a\x00b\xffc", "X-Long": strings.Repeat("é", 300)}
		for i := range 38 {
			flood[fmt.Sprintf("X-Z%02d", i)] = "v"
		}
		bounded := e.succeeded(cs[1])
		bounded.Attempt.ResponseHeaders = flood
		none := e.succeeded(cs[2]) // a broker's, or an attempt from before: none
		e.complete(t, withHeaders, bounded, none)

		_, as := e.job(t, "acme", cs[0].Job.ID)
		if len(as) != 1 || !maps.Equal(as[0].RequestHeaders, sent) || !maps.Equal(as[0].ResponseHeaders, answer) {
			t.Fatalf("attempt headers = %v / %v, want %v / %v", as[0].RequestHeaders, as[0].ResponseHeaders, sent, answer)
		}
		_, as = e.job(t, "acme", cs[1].Job.ID)
		got := as[0].ResponseHeaders
		if len(got) != hub.MaxResponseHeaders || got["X-Bad"] != "a\uFFFDb\uFFFDc" || len(got["X-Long"]) > hub.MaxResponseHeaderValue ||
			!strings.HasPrefix(got["X-Long"], "éé") || as[0].RequestHeaders != nil {
			t.Fatalf("bounded headers: %d kept, X-Bad %q, X-Long %d bytes, request %v", len(got), got["X-Bad"], len(got["X-Long"]), as[0].RequestHeaders)
		}
		_, as = e.job(t, "acme", cs[2].Job.ID)
		if as[0].RequestHeaders != nil || as[0].ResponseHeaders != nil {
			t.Fatalf("an attempt without headers reads %v / %v, want nil", as[0].RequestHeaders, as[0].ResponseHeaders)
		}
	})
}

// A replayed job keeps when, by whom and as what it was replayed: a single
// replay is allowed again (and moves the marks), a bulk replay skips it and
// marks the others, each with its own fresh job; every read shows them.
func testReplayMarks(t *testing.T, open Opener) {
	e := setup(t, open, store.Options{})
	e.tenant(t, "acme", "")
	e.subscribe(t, "acme", "sub_1", 1)
	e.publish(t, "acme", "e", 3)
	var dead []string
	for range 3 {
		c := e.claim(t, 1)[0]
		e.complete(t, store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken},
			Status: hub.JobDeadLettered, DeadLetterReason: hub.DeadLetterExhausted, SubscriptionID: "sub_1"})
		dead = append(dead, c.Job.ID)
	}
	j, _ := e.job(t, "acme", dead[0])
	if j.ReplayedAt != nil || j.ReplayedBy != "" || j.ReplayedAs != "" {
		t.Fatalf("a job never replayed has marks: %+v", j)
	}

	e.clock.Advance(time.Minute)
	first, err := e.store.ReplayJob(e.ctx, "acme", dead[0], "key_1")
	if err != nil {
		t.Fatal(err)
	}
	j, _ = e.job(t, "acme", dead[0])
	if j.ReplayedAt == nil || !j.ReplayedAt.Equal(e.clock.Now()) || j.ReplayedBy != "key_1" || j.ReplayedAs != first.ID {
		t.Fatalf("after a replay by key_1 at %v as %s: %+v", e.clock.Now(), first.ID, j)
	}
	if fresh, _ := e.job(t, "acme", first.ID); fresh.ReplayedAt != nil || fresh.ReplayedBy != "" || fresh.ReplayedAs != "" {
		t.Fatalf("the fresh job has marks of its own: %+v", fresh)
	}

	// Asked for explicitly, a replayed job is replayed again.
	e.clock.Advance(time.Minute)
	second, err := e.store.ReplayJob(e.ctx, "acme", dead[0], "admin")
	if err != nil || second.ID == first.ID {
		t.Fatalf("a second single replay: %+v, %v", second, err)
	}
	j, _ = e.job(t, "acme", dead[0])
	if !j.ReplayedAt.Equal(e.clock.Now()) || j.ReplayedBy != "admin" || j.ReplayedAs != second.ID {
		t.Fatalf("the marks did not move to the second replay: %+v", j)
	}

	e.clock.Advance(time.Minute)
	res, err := e.store.ReplaySubscription(e.ctx, store.ReplayParams{TenantID: "acme", SubscriptionID: "sub_1",
		Status: hub.JobDeadLettered, By: "subject-42"})
	if err != nil || res != (store.ReplayResult{Replayed: 2, Matched: 3, AlreadyReplayed: 1}) {
		t.Fatalf("bulk replay = %+v, %v; want 2 of 3, the one replayed skipped", res, err)
	}
	listed, err := e.store.ListJobs(e.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: "sub_1", Status: hub.JobDeadLettered})
	if err != nil || len(listed) != 3 {
		t.Fatalf("dead letters listed: %+v, %v", listed, err)
	}
	found, err := e.store.SearchJobs(e.ctx, store.SearchJobsParams{TenantID: "acme", Status: hub.JobDeadLettered, Limit: 10})
	if err != nil || len(found) != 3 {
		t.Fatalf("dead letters searched: %+v, %v", found, err)
	}
	seen := map[string]bool{}
	for _, jobs := range [][]hub.Job{listed, found} {
		for _, j := range jobs {
			if j.ID == dead[0] {
				if j.ReplayedBy != "admin" || j.ReplayedAs != second.ID {
					t.Errorf("the bulk replay touched the job it skipped: %+v", j)
				}
				continue
			}
			if j.ReplayedAt == nil || !j.ReplayedAt.Equal(e.clock.Now()) || j.ReplayedBy != "subject-42" || j.ReplayedAs == "" {
				t.Errorf("a job the bulk replay replayed: %+v", j)
				continue
			}
			fresh, _ := e.job(t, "acme", j.ReplayedAs)
			if fresh.EventID != j.EventID || fresh.Status != hub.JobPending {
				t.Errorf("%s replayed as %+v", j.ID, fresh)
			}
			seen[j.ReplayedAs] = true
		}
	}
	if len(seen) != 2 {
		t.Errorf("the two replayed jobs name %d distinct fresh jobs, want 2", len(seen))
	}
	_, jobs, err := e.store.GetEvent(e.ctx, "acme", "e-00001")
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, j := range jobs {
		if j.ReplayedBy == "subject-42" {
			marked++
		}
	}
	if marked != 1 {
		t.Errorf("the event's deliveries show %d marked jobs, want its 1 dead letter: %+v", marked, jobs)
	}
}
