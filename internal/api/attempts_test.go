package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/apikey"
	"github.com/lerianstudio/streaming-hub/internal/config"
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

// deadLetters dead-letters the tenant's next n due deliveries, one at a
// time, as dispatch would after the last attempt, and returns their ids.
func (h *hubAPI) deadLetters(sub string, n int) []string {
	h.t.Helper()
	ctx := context.Background()
	var ids []string
	for range n {
		claimed, err := h.store.ClaimJobs(ctx, store.ClaimParams{Batch: 1, Lease: time.Minute})
		if err != nil || len(claimed) != 1 {
			h.t.Fatalf("claimed %d, %v", len(claimed), err)
		}
		c := claimed[0]
		now := h.clock.Now()
		if _, err := h.store.CompleteJobs(ctx, store.CompleteParams{Completions: []store.Completion{{
			JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobDeadLettered,
			DeadLetterReason: hub.DeadLetterExhausted, LastError: "destination answered 500", SubscriptionID: sub,
			Attempt: &hub.Attempt{ID: hub.NewID("att", now), StartedAt: now, StatusCode: 500, Error: "destination answered 500"},
		}}}); err != nil {
			h.t.Fatal(err)
		}
		ids = append(ids, c.Job.ID)
	}
	return ids
}

type marksJSON struct {
	ID         string  `json:"id"`
	Status     string  `json:"status"`
	ReplayedAt *string `json:"replayed_at"`
	ReplayedBy *string `json:"replayed_by"`
	ReplayedAs *string `json:"replayed_as"`
}

// A replayed delivery is marked with when, by whom (the API key's id, or
// "admin") and as what it was replayed, wherever deliveries are shown; a
// bulk replay skips the dead letters replayed already and says so; a
// single replay of one is still allowed and moves its marks.
func TestReplay_MarksSkipsAndReasons(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		keyID, _, _ := apikey.Parse(acme.token)
		rc := newReceiver(t)
		sub, _ := acme.subscription(rc.URL)
		acme.json("POST", "/v1/subscriptions/"+sub+"/verify", "", 200, nil)
		var evs []hub.Event
		for i := range 3 {
			evs = append(evs, storetest.NewEvent("acme", fmt.Sprintf("evt-%d", i)))
		}
		if _, err := h.store.Ingest(context.Background(), store.IngestParams{Events: evs}); err != nil {
			t.Fatal(err)
		}
		dead := h.deadLetters(sub, 3)
		get := func(id string) marksJSON {
			var m marksJSON
			acme.json("GET", "/v1/deliveries/"+id, "", 200, &m)
			return m
		}
		bulk := func(c client, body string, headers ...string) (map[string]any, []byte) {
			status, _, b := c.do("POST", "/v1/subscriptions/"+sub+"/replay", body, headers...)
			var out map[string]any
			if err := json.Unmarshal(b, &out); status != 202 || err != nil {
				t.Fatalf("bulk replay: %d %s", status, b)
			}
			return out, b
		}

		if m := get(dead[0]); m.ReplayedAt != nil || m.ReplayedBy != nil || m.ReplayedAs != nil {
			t.Fatalf("a delivery never replayed shows marks: %+v", m)
		}
		out, b := bulk(acme, `{"since":"2099-01-01T00:00:00Z"}`)
		if out["replayed"] != 0.0 || out["matched"] != 0.0 || out["already_replayed"] != 0.0 ||
			out["reason"] != "no dead letters since 2099-01-01T00:00:00Z" {
			t.Fatalf("a window without dead letters: %s", b)
		}

		// One replayed by the tenant's key.
		h.clock.Advance(time.Minute)
		var fresh marksJSON
		acme.json("POST", "/v1/deliveries/"+dead[0]+"/replay", "", 202, &fresh)
		m := get(dead[0])
		if m.ReplayedAt == nil || m.ReplayedBy == nil || *m.ReplayedBy != keyID || m.ReplayedAs == nil || *m.ReplayedAs != fresh.ID {
			t.Fatalf("after a replay by key %s as %s: %+v", keyID, fresh.ID, m)
		}
		if at, _ := time.Parse(time.RFC3339Nano, *m.ReplayedAt); !at.Equal(h.clock.Now()) {
			t.Fatalf("replayed_at %s, want %v", *m.ReplayedAt, h.clock.Now())
		}
		if f := get(fresh.ID); f.Status != "pending" || f.ReplayedAt != nil {
			t.Fatalf("the fresh delivery: %+v", f)
		}

		// The bulk replay, by the admin, skips it.
		h.clock.Advance(time.Minute)
		out, b = bulk(h.admin, `{"status":"dead_lettered"}`, "X-Tenant-Id", "acme")
		if out["replayed"] != 2.0 || out["matched"] != 3.0 || out["already_replayed"] != 1.0 || out["reason"] != nil {
			t.Fatalf("bulk replay with one replayed already: %s", b)
		}
		var page struct{ Data []marksJSON }
		acme.json("GET", "/v1/subscriptions/"+sub+"/deliveries?status=dead_lettered", "", 200, &page)
		var searched struct{ Data []marksJSON }
		acme.json("GET", "/v1/deliveries?status=dead_lettered", "", 200, &searched)
		if len(page.Data) != 3 || len(searched.Data) != 3 {
			t.Fatalf("dead letters: listed %+v, searched %+v", page.Data, searched.Data)
		}
		for _, m := range append(page.Data, searched.Data...) {
			want := "admin"
			if m.ID == dead[0] {
				want = keyID
			}
			if m.ReplayedBy == nil || *m.ReplayedBy != want || m.ReplayedAs == nil || m.ReplayedAt == nil {
				t.Errorf("%s: replayed_by %v, want %s, and replayed_as and _at set: %+v", m.ID, m.ReplayedBy, want, m)
			}
		}

		out, b = bulk(acme, `{}`)
		if out["replayed"] != 0.0 || out["matched"] != 3.0 || out["already_replayed"] != 3.0 ||
			out["reason"] != "all 3 matching dead letters were already replayed" {
			t.Fatalf("bulk replay again: %s", b)
		}
		// Asked for one by one, a replayed dead letter is replayed again.
		var again marksJSON
		acme.json("POST", "/v1/deliveries/"+dead[1]+"/replay", "", 202, &again)
		if m := get(dead[1]); m.ReplayedBy == nil || *m.ReplayedBy != keyID || *m.ReplayedAs != again.ID {
			t.Fatalf("a second, single replay: %+v, want by %s as %s", m, keyID, again.ID)
		}

		// A disabled subscription is refused, as before, with the reason.
		acme.json("PATCH", "/v1/subscriptions/"+sub, `{"enabled":false}`, 200, nil)
		status, _, b := acme.do("POST", "/v1/subscriptions/"+sub+"/replay", `{}`)
		wantError(t, status, b, 409, "conflict")
		if !strings.Contains(string(b), "is disabled") {
			t.Fatalf("replay to a disabled subscription: %s", b)
		}
	})
}

func TestPrincipal_WhoNamesTheCaller(t *testing.T) {
	for _, c := range []struct {
		p    api.Principal
		want string
	}{
		{api.Principal{Admin: true}, "admin"},
		{api.Principal{TenantID: "acme", KeyID: "key_1"}, "key_1"},
		{api.Principal{Admin: true, Subject: "alice", TokenHash: "h"}, "alice"},
		{api.Principal{TenantID: "acme", Subject: "bob", TokenHash: "h"}, "bob"},
		{api.Principal{TenantID: "acme", LinkID: "pl_1"}, "portal:pl_1"},
	} {
		if got := c.p.Who(); got != c.want {
			t.Errorf("%+v.Who() = %q, want %q", c.p, got, c.want)
		}
	}
}

// A replay asked with an access-manager JWT is marked with the token's
// subject (for a user, <owner>/<sub>).
func TestReplay_ByAJWTIsMarkedWithItsSubject(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newAMHub(t, d, config.Auth{Issuer: issuer})
		good, _ := testKeys(t)
		ctx := context.Background()
		if _, err := h.store.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
			t.Fatal(err)
		}
		s := storetest.NewSubscription("acme", "sub_1")
		s.VerificationState = hub.VerificationActive
		if _, err := h.store.CreateSubscription(ctx, s); err != nil {
			t.Fatal(err)
		}
		if _, err := h.store.Ingest(ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", "evt-1")}}); err != nil {
			t.Fatal(err)
		}
		claimed, err := h.store.ClaimJobs(ctx, store.ClaimParams{Batch: 1, Lease: time.Minute})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claimed %d, %v", len(claimed), err)
		}
		c := claimed[0]
		if _, err := h.store.CompleteJobs(ctx, store.CompleteParams{Completions: []store.Completion{{
			JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobDeadLettered,
			DeadLetterReason: hub.DeadLetterExhausted, SubscriptionID: "sub_1"}}}); err != nil {
			t.Fatal(err)
		}
		user := mint(t, good, "RS256", h.claims(map[string]any{"type": "normal-user", "owner": "lerian", "sub": "alice", "tenantId": "acme"}))
		if status, body := h.do("POST", "/v1/deliveries/"+c.Job.ID+"/replay", user, "203.0.113.9:4242"); status != 202 {
			t.Fatalf("replay with a JWT: %d %s", status, body)
		}
		j, _, err := h.store.GetJob(ctx, "acme", c.Job.ID)
		if err != nil || j.ReplayedBy != "lerian/alice" {
			t.Fatalf("replayed_by %q, want the token's subject lerian/alice (%v)", j.ReplayedBy, err)
		}
	})
}
