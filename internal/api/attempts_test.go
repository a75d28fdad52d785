package api_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// GET /v1/deliveries/{id} shows each attempt's request and response
// headers as objects: {} for an attempt that kept none (a broker's answer,
// an attempt logged before the hub kept them).
func TestDeliveries_AttemptLogShowsHeaders(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		rc := newReceiver(t)
		sub, _ := acme.subscription(rc.URL)
		acme.json("POST", "/v1/subscriptions/"+sub+"/verify", "", 200, nil)
		ctx := context.Background()
		if _, err := h.store.Ingest(ctx, store.IngestParams{Events: []hub.Event{
			storetest.NewEvent("acme", "evt-1"), storetest.NewEvent("acme", "evt-2")}}); err != nil {
			t.Fatal(err)
		}
		// One attempt each, through the store's completion path as
		// dispatch writes it (the subscription takes one job at a time).
		attempt := func(a *hub.Attempt) string {
			claimed, err := h.store.ClaimJobs(ctx, store.ClaimParams{Batch: 1, Lease: time.Minute})
			if err != nil || len(claimed) != 1 {
				t.Fatalf("claimed %d, %v", len(claimed), err)
			}
			c := claimed[0]
			if _, err := h.store.CompleteJobs(ctx, store.CompleteParams{Completions: []store.Completion{{
				JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobSucceeded,
				SubscriptionID: sub, Attempt: a}}}); err != nil {
				t.Fatal(err)
			}
			return c.Job.ID
		}
		now := time.Now()
		withHeaders := attempt(&hub.Attempt{ID: hub.NewID("att", now), StartedAt: now, StatusCode: 200,
			RequestHeaders:  map[string]string{"webhook-signature": "v1,abc=", "Authorization": hub.Redacted},
			ResponseHeaders: map[string]string{"X-Receiver": "r1"}})
		without := attempt(&hub.Attempt{ID: hub.NewID("att", now), StartedAt: now, StatusCode: 200})

		type attempts struct {
			AttemptLog []struct {
				RequestHeaders  map[string]string `json:"request_headers"`
				ResponseHeaders map[string]string `json:"response_headers"`
			} `json:"attempt_log"`
		}
		get := func(id string) (attempts, []byte) {
			var out attempts
			status, _, body := acme.do("GET", "/v1/deliveries/"+id, "")
			if err := json.Unmarshal(body, &out); status != 200 || err != nil || len(out.AttemptLog) != 1 {
				t.Fatalf("GET /v1/deliveries/%s: %d %s", id, status, body)
			}
			return out, body
		}
		one, body := get(withHeaders)
		if a := one.AttemptLog[0]; a.RequestHeaders["webhook-signature"] != "v1,abc=" || a.RequestHeaders["Authorization"] != "[redacted]" ||
			a.ResponseHeaders["X-Receiver"] != "r1" {
			t.Fatalf("the attempt's headers: %s", body)
		}
		one, body = get(without)
		if a := one.AttemptLog[0]; a.RequestHeaders == nil || len(a.RequestHeaders) != 0 || a.ResponseHeaders == nil || len(a.ResponseHeaders) != 0 {
			t.Fatalf("an attempt without headers shows {} for both: %s", body)
		}
	})
}
