package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	hubpkg "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// attempt logs one attempt of the tenant's next due delivery, as dispatch
// would, and returns the delivery's id.
func (h *hub) attempt(status hubpkg.JobStatus, a *hubpkg.Attempt) string {
	h.t.Helper()
	ctx := context.Background()
	claimed, err := h.store.ClaimJobs(ctx, store.ClaimParams{Batch: 1, Lease: time.Minute})
	if err != nil || len(claimed) != 1 {
		h.t.Fatalf("claimed %d, %v", len(claimed), err)
	}
	c := claimed[0]
	out := store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: status,
		SubscriptionID: c.Job.SubscriptionID, Attempt: a}
	if status == hubpkg.JobDeadLettered {
		out.DeadLetterReason, out.LastError = hubpkg.DeadLetterExhausted, a.Error
	}
	if _, err := h.store.CompleteJobs(ctx, store.CompleteParams{Completions: []store.Completion{out}}); err != nil {
		h.t.Fatal(err)
	}
	return c.Job.ID
}

// A delivery's page shows each attempt's request headers (credentials
// redacted, as logged) and response headers, as text.
func TestDelivery_AttemptShowsItsHeaders(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		key := h.tenant("acme")
		rc := receiver(t, "ok")
		h.subscription("acme", "hooks", rc.URL)
		h.ingest(storetest.NewEvent("acme", "evt-1"))
		now := h.clock.Now()
		job := h.attempt(hubpkg.JobSucceeded, &hubpkg.Attempt{ID: hubpkg.NewID("att", now), StartedAt: now, StatusCode: 200,
			RequestHeaders:  map[string]string{"webhook-signature": "v1,c2lnbmVk", "Authorization": hubpkg.Redacted},
			ResponseHeaders: map[string]string{"X-Receiver": "r1", "X-Evil": hostile}})
		got := h.signIn(key).get("/console/deliveries/" + job)
		assertInert(t, "delivery", got.body)
		for _, want := range []string{"Request headers", "webhook-signature", "v1,c2lnbmVk", "Authorization", "[redacted]",
			"Response headers", "X-Receiver", "r1", "&lt;script&gt;"} {
			if !strings.Contains(got.body, want) {
				t.Errorf("the delivery page lacks %q:\n%s", want, got.body)
			}
		}
	})
}
