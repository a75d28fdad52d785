package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// verified creates a subscription to rc and verifies it, so ingest
// matches it.
func verified(c client, rc *receiver) (id, secret string) {
	id, secret = c.subscription(rc.URL)
	c.json("POST", "/v1/subscriptions/"+id+"/verify", "", 200, nil)
	return id, secret
}

func TestTestEvent_OneSignedAttemptNothingStored(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true, pull: &config.Pull{Rate: 0.001, Burst: 2}})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		rc := newReceiver(t)
		id, secret := acme.subscription(rc.URL) // pending: never verified
		rc.setAnswer(func(w http.ResponseWriter, _ string) { w.Write([]byte("thanks")) })

		var res struct {
			DeliveryID   string  `json:"delivery_id"`
			StatusCode   *int    `json:"status_code"`
			DurationMS   *int64  `json:"duration_ms"`
			ResponseBody string  `json:"response_body"`
			Error        *string `json:"error"`
		}
		acme.json("POST", "/v1/subscriptions/"+id+"/test", "", 200, &res)
		if res.StatusCode == nil || *res.StatusCode != 200 || res.ResponseBody != "thanks" || res.Error != nil || res.DurationMS == nil || res.DeliveryID == "" {
			t.Fatalf("answer %+v", res)
		}
		req, body := rc.last()
		if rc.count() != 1 || string(body) != `{"test":true}` || req.Header.Get("X-Lerian-Test") != "true" ||
			req.Header.Get("X-Lerian-Event-Type") != "hub.test" || !strings.HasPrefix(req.Header.Get("webhook-id"), "test_") ||
			req.Header.Get("ce-id") != req.Header.Get("webhook-id") || req.Header.Get("X-Lerian-Delivery-Id") != res.DeliveryID {
			t.Fatalf("request %v %s", req.Header, body)
		}
		key, _ := destination.SecretKey(secret)
		ts, _ := strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64)
		if want := destination.Signature(key, req.Header.Get("webhook-id"), ts, body); !strings.Contains(req.Header.Get("webhook-signature"), want) {
			t.Fatalf("signature %q, want %q", req.Header.Get("webhook-signature"), want)
		}

		// A type and data of the caller's; a failing destination is an
		// outcome, not an error.
		rc.setAnswer(func(w http.ResponseWriter, _ string) { w.WriteHeader(503) })
		acme.json("POST", "/v1/subscriptions/"+id+"/test", `{"type":"transaction.posted","data":{"amount":"1.00"}}`, 200, &res)
		req, body = rc.last()
		if *res.StatusCode != 503 || res.Error == nil || string(body) != `{"amount":"1.00"}` ||
			req.Header.Get("ce-type") != "studio.lerian.transaction.posted" || req.Header.Get("X-Lerian-Event-Type") != "transaction.posted" {
			t.Fatalf("answer %+v, body %s, ce-type %s", res, body, req.Header.Get("ce-type"))
		}
		// Nothing stored: no event, no job; not retried.
		if evs, _ := h.store.ListEvents(context.Background(), store.ListEventsParams{TenantID: "acme", Limit: 10}); len(evs) != 0 {
			t.Fatalf("a test event was stored: %+v", evs)
		}
		if jobs, _ := h.store.ListJobs(context.Background(), store.ListJobsParams{TenantID: "acme", SubscriptionID: id, Limit: 10}); len(jobs) != 0 {
			t.Fatalf("a test event made jobs: %+v", jobs)
		}
		status, _, b := globex.do("POST", "/v1/subscriptions/"+id+"/test", "")
		wantError(t, status, b, 404, "not_found")
		status, _, b = acme.do("POST", "/v1/subscriptions/"+id+"/test", `{"type":"Not A Type"}`)
		wantError(t, status, b, 400, "invalid")
		// The pull bucket: two tokens, both spent (a refused body spends none).
		status, hdr, b := acme.do("POST", "/v1/subscriptions/"+id+"/test", "")
		wantError(t, status, b, 429, "rate_limited")
		if hdr.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
		if rc.count() != 2 {
			t.Fatalf("destination got %d requests, want 2", rc.count())
		}
	})
}

func TestTestEvent_SSRFRulesApply(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{resolver: lyingDNS{netip.MustParseAddr("127.0.0.1")}})
		acme := h.tenant("acme")
		rc := newReceiver(t)
		id, _ := acme.subscription("https://hooks.example.com:" + mustPort(t, rc.URL) + "/hook")
		var res struct{ Error *string }
		acme.json("POST", "/v1/subscriptions/"+id+"/test", "", 200, &res)
		if res.Error == nil || !strings.Contains(*res.Error, "resolves to a private address") || rc.count() != 0 {
			t.Fatalf("answer %+v, %d requests", res, rc.count())
		}
	})
}

func TestHealth_FromRollupsWithWindowAndIsolation(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		id, _ := verified(acme, newReceiver(t))
		ctx := context.Background()
		ingestEvents(t, h.store, storetest.NewEvent("acme", "e1"), storetest.NewEvent("acme", "e2"), storetest.NewEvent("acme", "e3"))
		claimed, err := h.store.ClaimJobs(ctx, store.ClaimParams{Batch: 10, Lease: time.Minute})
		if err != nil || len(claimed) != 1 { // max_in_flight 1
			t.Fatalf("claimed %d, %v", len(claimed), err)
		}
		now := h.clock.Now()
		c := claimed[0]
		if _, err := h.store.CompleteJobs(ctx, store.CompleteParams{Completions: []store.Completion{{
			JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobPending, NextAttemptAt: now.Add(time.Hour),
			LastError: "destination answered 500", SubscriptionID: id,
			Attempt: &hub.Attempt{ID: hub.NewID("att", now), StartedAt: now, Duration: 80 * time.Millisecond, StatusCode: 500, Error: "destination answered 500"},
		}}}); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		acme.json("GET", "/v1/subscriptions/"+id+"/health", "", 200, &got)
		if got["window"] != "24h" || got["attempts"] != 1.0 || got["failures"] != 1.0 || got["success_rate"] != 0.0 ||
			got["last_error"] != "destination answered 500" || got["breaker_state"] != "closed" || got["failure_span"] == nil {
			t.Fatalf("health %v", got)
		}
		if b := got["backlog"].(map[string]any); b["pending"] != 3.0 || b["in_flight"] != 0.0 || b["dead_lettered"] != 0.0 {
			t.Fatalf("backlog %v", b)
		}
		if n := len(got["buckets"].([]any)); n == 0 || n > 100 {
			t.Fatalf("%d buckets", n)
		}
		if l := got["latency_ms"].(map[string]any); l["p50"] == nil {
			t.Fatalf("latency %v", l)
		}
		acme.json("GET", "/v1/subscriptions/"+id+"/health?window=720h", "", 200, &got)
		if len(got["buckets"].([]any)) > 100 {
			t.Fatal("more than 100 buckets")
		}
		for _, w := range []string{"721h", "bogus", "-1h", "0s"} {
			status, _, b := acme.do("GET", "/v1/subscriptions/"+id+"/health?window="+w, "")
			wantError(t, status, b, 400, "invalid")
		}
		status, _, b := globex.do("GET", "/v1/subscriptions/"+id+"/health", "")
		wantError(t, status, b, 404, "not_found")
	})
}

func TestHubHealth_AdminSeesEveryTenantsAttemptsPerBucket(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		subA, _ := verified(acme, newReceiver(t))
		subG, _ := verified(globex, newReceiver(t))
		ctx := context.Background()
		ingestEvents(t, h.store, storetest.NewEvent("acme", "a1"), storetest.NewEvent("globex", "g1"))
		claimed, err := h.store.ClaimJobs(ctx, store.ClaimParams{Batch: 10, Lease: time.Minute})
		if err != nil || len(claimed) != 2 {
			t.Fatalf("claimed %d, %v", len(claimed), err)
		}
		now := h.clock.Now()
		var cs []store.Completion
		for _, c := range claimed {
			cp := store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobSucceeded,
				SubscriptionID: c.Job.SubscriptionID,
				Attempt:        &hub.Attempt{ID: hub.NewID("att", now), StartedAt: now, Duration: 300 * time.Millisecond, StatusCode: 200}}
			if c.Job.SubscriptionID == subG {
				cp.Status, cp.NextAttemptAt, cp.LastError = hub.JobPending, now.Add(time.Hour), "destination answered 500"
				cp.Attempt.StatusCode, cp.Attempt.Error = 500, "destination answered 500"
			}
			cs = append(cs, cp)
		}
		if _, err := h.store.CompleteJobs(ctx, store.CompleteParams{Completions: cs}); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Window        string
			Attempts      int64
			Successes     int64
			Failures      int64
			BucketSeconds int64                  `json:"bucket_seconds"`
			LatencyMS     struct{ P99 *float64 } `json:"latency_ms"`
			Buckets       []struct {
				Start               time.Time
				Successes, Failures int64
				P99MS               *float64 `json:"p99_ms"`
			}
		}
		h.admin.json("GET", "/v1/admin/health?window=1h", "", 200, &got)
		if got.Window != "1h" || got.Attempts != 2 || got.Successes != 1 || got.Failures != 1 || got.BucketSeconds != 300 ||
			got.LatencyMS.P99 == nil || len(got.Buckets) < 12 || len(got.Buckets) > 13 {
			t.Fatalf("hub health %+v", got)
		}
		last := got.Buckets[len(got.Buckets)-1]
		if last.Successes != 1 || last.Failures != 1 || last.P99MS == nil || *last.P99MS < 250 || *last.P99MS > 500 ||
			got.Buckets[0].P99MS != nil {
			t.Fatalf("buckets %+v", got.Buckets)
		}
		h.admin.json("GET", "/v1/admin/health", "", 200, &got)
		if got.Window != "24h" || got.Attempts != 2 || got.BucketSeconds != 900 {
			t.Fatalf("default window: %+v", got)
		}
		// A subscription's health buckets carry their p99 too.
		var sub map[string]any
		acme.json("GET", "/v1/subscriptions/"+subA+"/health?window=1h", "", 200, &sub)
		buckets := sub["buckets"].([]any)
		if sub["bucket_seconds"] != 300.0 || buckets[len(buckets)-1].(map[string]any)["p99_ms"] == nil {
			t.Fatalf("subscription health %v", sub)
		}
		status, _, b := acme.do("GET", "/v1/admin/health", "")
		wantError(t, status, b, 403, "forbidden")
		status, _, b = h.admin.do("GET", "/v1/admin/health?window=721h", "")
		wantError(t, status, b, 400, "invalid")
	})
}

// TestHealth_HubAndSubscriptionShareFieldsInOneOrder: the hub's health
// is a subscription's health less what only a subscription has (its last
// error, backlog, breaker and failure span), its keys in the same order;
// with one subscription's attempts in the hub, the shared fields agree.
func TestHealth_HubAndSubscriptionShareFieldsInOneOrder(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		id, _ := verified(acme, newReceiver(t))
		ctx := context.Background()
		ingestEvents(t, h.store, storetest.NewEvent("acme", "e1"))
		claimed, err := h.store.ClaimJobs(ctx, store.ClaimParams{Batch: 10, Lease: time.Minute})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claimed %d, %v", len(claimed), err)
		}
		now := h.clock.Now()
		if _, err := h.store.CompleteJobs(ctx, store.CompleteParams{Completions: []store.Completion{{
			JobLease: store.JobLease{JobID: claimed[0].Job.ID, LeaseToken: claimed[0].LeaseToken}, Status: hub.JobSucceeded,
			SubscriptionID: id,
			Attempt:        &hub.Attempt{ID: hub.NewID("att", now), StartedAt: now, Duration: 120 * time.Millisecond, StatusCode: 200},
		}}}); err != nil {
			t.Fatal(err)
		}
		_, _, subBody := acme.do("GET", "/v1/subscriptions/"+id+"/health?window=1h", "")
		_, _, hubBody := h.admin.do("GET", "/v1/admin/health?window=1h", "")
		shared := []string{"window", "attempts", "successes", "failures", "success_rate", "latency_ms", "last_success_at", "last_failure_at"}
		buckets := []string{"bucket_seconds", "buckets"}
		wantSub := append(append(append([]string{}, shared...), "last_error", "backlog", "breaker_state", "failure_span", "destination_concurrency"), buckets...)
		wantHub := append(append([]string{}, shared...), buckets...)
		if got := topLevelKeys(t, subBody); strings.Join(got, ",") != strings.Join(wantSub, ",") {
			t.Errorf("subscription health keys %v, want %v", got, wantSub)
		}
		if got := topLevelKeys(t, hubBody); strings.Join(got, ",") != strings.Join(wantHub, ",") {
			t.Errorf("hub health keys %v, want %v", got, wantHub)
		}
		var sub, all map[string]json.RawMessage
		if json.Unmarshal(subBody, &sub) != nil || json.Unmarshal(hubBody, &all) != nil {
			t.Fatalf("bodies %s / %s", subBody, hubBody)
		}
		for _, k := range append(shared, buckets...) {
			if string(sub[k]) != string(all[k]) {
				t.Errorf("%s: subscription %s, hub %s", k, sub[k], all[k])
			}
		}
		if string(all["attempts"]) != "1" || string(all["last_success_at"]) == "null" {
			t.Errorf("hub health %s", hubBody)
		}
	})
}

// topLevelKeys are a JSON object's keys in the order sent.
func topLevelKeys(t *testing.T, body []byte) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(body)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", body)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%v in %s", err, body)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatalf("%v in %s", err, body)
		}
	}
	return keys
}

func TestLookups_EventWithDeliveriesAndSearch(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		sub1, _ := verified(acme, newReceiver(t))
		sub2, _ := verified(acme, newReceiver(t))
		ingestEvents(t, h.store, storetest.NewEvent("acme", "evt-1"), storetest.NewEvent("acme", "evt-2"), storetest.NewEvent("globex", "evt-g"))

		var ev struct {
			pulledEvent
			Deliveries []struct {
				ID, Status     string
				SubscriptionID string  `json:"subscription_id"`
				Attempts       int     `json:"attempts"`
				LastError      *string `json:"last_error"`
				CreatedAt      string  `json:"created_at"`
			}
		}
		acme.json("GET", "/v1/events/evt-1", "", 200, &ev)
		if ev.ID != "evt-1" || ev.Type != "transaction.posted" || string(ev.Data) != `{"id":"evt-1"}` || len(ev.Deliveries) != 2 ||
			ev.Deliveries[0].Status != "pending" || ev.Deliveries[0].CreatedAt == "" {
			t.Fatalf("event %+v", ev)
		}
		for _, who := range []struct {
			c    client
			path string
		}{{globex, "/v1/events/evt-1"}, {acme, "/v1/events/evt-g"}, {acme, "/v1/events/nope"}} {
			status, _, b := who.c.do("GET", who.path, "")
			wantError(t, status, b, 404, "not_found")
		}

		type jobPage struct {
			Data []struct {
				ID, Status     string
				SubscriptionID string `json:"subscription_id"`
				EventID        string `json:"event_id"`
			}
			NextCursor *string `json:"next_cursor"`
		}
		var p jobPage
		acme.json("GET", "/v1/deliveries", "", 200, &p)
		if len(p.Data) != 4 || p.NextCursor != nil || p.Data[0].ID < p.Data[3].ID {
			t.Fatalf("deliveries %+v", p)
		}
		acme.json("GET", "/v1/deliveries?limit=3", "", 200, &p)
		if len(p.Data) != 3 || p.NextCursor == nil {
			t.Fatalf("first page %+v", p)
		}
		acme.json("GET", "/v1/deliveries?limit=3&cursor="+*p.NextCursor, "", 200, &p)
		if len(p.Data) != 1 || p.NextCursor != nil {
			t.Fatalf("second page %+v", p)
		}
		acme.json("GET", "/v1/deliveries?subscription_id="+sub2+"&event_id=evt-2&status=pending", "", 200, &p)
		if len(p.Data) != 1 || p.Data[0].SubscriptionID != sub2 || p.Data[0].EventID != "evt-2" {
			t.Fatalf("filtered %+v", p)
		}
		since := h.clock.Now().Add(time.Second).Format(time.RFC3339)
		acme.json("GET", "/v1/deliveries?since="+since, "", 200, &p)
		if len(p.Data) != 0 {
			t.Fatalf("since the future: %+v", p)
		}
		until := h.clock.Now().Add(time.Second).Format(time.RFC3339)
		acme.json("GET", "/v1/deliveries?until="+until+"&subscription_id="+sub1, "", 200, &p)
		if len(p.Data) != 2 {
			t.Fatalf("until: %+v", p)
		}
		globex.json("GET", "/v1/deliveries?subscription_id="+sub1, "", 200, &p)
		if len(p.Data) != 0 {
			t.Fatalf("globex sees acme's deliveries: %+v", p)
		}
		for _, q := range []string{"status=done", "since=yesterday", "until=2020-01-01T00:00:00Z&since=2021-01-01T00:00:00Z", "limit=0", "cursor=%25%25"} {
			status, _, b := acme.do("GET", "/v1/deliveries?"+q, "")
			wantError(t, status, b, 400, "invalid")
		}
	})
}

func TestKeys_ListedWithLastUseNeverTheSecret(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		var keys struct {
			Data []map[string]any
		}
		h.admin.json("GET", "/v1/tenants/acme/keys", "", 200, &keys)
		if len(keys.Data) != 1 {
			t.Fatalf("keys %v", keys)
		}
		k := keys.Data[0]
		if len(k) != 3 || k["id"] == nil || k["created_at"] == nil {
			t.Fatalf("key fields %v: want exactly id, created_at, last_used_at", k)
		}
		// The tenant() helper used the key once already (none yet): use it.
		acme.json("GET", "/v1/subscriptions", "", 200, nil)
		h.admin.json("GET", "/v1/tenants/acme/keys", "", 200, &keys)
		first, _ := keys.Data[0]["last_used_at"].(string)
		if first != "2026-11-30T12:00:00Z" {
			t.Fatalf("last_used_at %v after a request", keys.Data[0]["last_used_at"])
		}
		// Within the minute: not rewritten; after it: rewritten.
		h.clock.Advance(30 * time.Second)
		acme.json("GET", "/v1/subscriptions", "", 200, nil)
		h.admin.json("GET", "/v1/tenants/acme/keys", "", 200, &keys)
		if keys.Data[0]["last_used_at"] != first {
			t.Fatalf("rewritten within a minute: %v", keys.Data[0]["last_used_at"])
		}
		h.clock.Advance(31 * time.Second)
		acme.json("GET", "/v1/subscriptions", "", 200, nil)
		h.admin.json("GET", "/v1/tenants/acme/keys", "", 200, &keys)
		if keys.Data[0]["last_used_at"] != "2026-11-30T12:01:01Z" {
			t.Fatalf("after a minute: %v", keys.Data[0]["last_used_at"])
		}
		status, _, b := acme.do("GET", "/v1/tenants/acme/keys", "")
		wantError(t, status, b, 403, "forbidden")
		status, _, b = h.admin.do("GET", "/v1/tenants/nobody/keys", "")
		wantError(t, status, b, 404, "not_found")
	})
}

func TestEventTypes_CatalogAndWarnings(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		ingestEvents(t, h.store, storetest.NewEvent("acme", "evt-1"))
		manifest := `{"version":"1.0.0","publisher":{"serviceName":"ledger","source":"//midaz/ledger"},"topic":"lerian.streaming.ledger",
			"events":[{"key":"balance.updated","resourceType":"balance","eventType":"updated","schemaVersion":"2.1.0","dataContentType":"application/json",
			"dataSchema":"https://schemas.lerian.studio/balance.updated/2.json","systemEvent":false,"description":"A balance moved","class":"domain"},
			{"key":"ledger.heartbeat","resourceType":"ledger","eventType":"heartbeat","schemaVersion":"1.0.0","systemEvent":true}]}`
		if err := h.store.RecordManifestFetch(context.Background(), "http://ledger/v1/streaming/manifest", h.clock.Now(), []byte(manifest), ""); err != nil {
			t.Fatal(err)
		}
		type entry struct {
			Type         string
			SchemaMajors []int `json:"schema_majors"`
			Source       string
			Description  string
			DataSchema   string  `json:"data_schema"`
			FirstSeenAt  *string `json:"first_seen_at"`
			InManifest   bool    `json:"in_manifest"`
		}
		var cat struct{ Data []entry }
		acme.json("GET", "/v1/event-types", "", 200, &cat)
		byType := map[string]entry{}
		for _, e := range cat.Data {
			byType[e.Type] = e
		}
		if e := byType["transaction.posted"]; e.FirstSeenAt == nil || e.InManifest || e.Source != "//midaz/ledger" {
			t.Fatalf("seen type %+v", e)
		}
		if e := byType["balance.updated"]; !e.InManifest || e.SchemaMajors[0] != 2 || e.Description != "A balance moved" || e.FirstSeenAt != nil {
			t.Fatalf("manifest type %+v", e)
		}
		if _, ok := byType["ledger.heartbeat"]; ok {
			t.Fatal("a system event is in the catalog")
		}
		if e := byType["hub.subscription.disabled"]; e.Source != "//streaming-hub" {
			t.Fatalf("operational type %+v", e)
		}
		globex.json("GET", "/v1/event-types", "", 200, &cat)
		for _, e := range cat.Data {
			if e.Type == "transaction.posted" {
				t.Fatal("globex sees acme's traffic")
			}
		}

		var sub struct {
			ID       string
			Warnings []string
		}
		acme.json("POST", "/v1/subscriptions", `{"name":"n","event_types":[{"type":"transaction.psoted","schema_major":1},{"type":"transaction.posted","schema_major":1},{"type":"hub.delivery.dead_lettered","schema_major":1}],"destination":{"url":"https://example.com"}}`, 201, &sub)
		if len(sub.Warnings) != 1 || sub.Warnings[0] != "transaction.psoted: no manifest lists it and no event carried it" {
			t.Fatalf("warnings %q", sub.Warnings)
		}
		var patched map[string]any
		acme.json("PATCH", "/v1/subscriptions/"+sub.ID, `{"event_types":[{"type":"balance.updated","schema_major":2}]}`, 200, &patched)
		if _, ok := patched["warnings"]; ok {
			t.Fatalf("warnings for a manifest type: %v", patched["warnings"])
		}
		acme.json("PATCH", "/v1/subscriptions/"+sub.ID, `{"event_types":[{"type":"balance.updated","schema_major":3}]}`, 200, &patched)
		if w, _ := patched["warnings"].([]any); len(w) != 1 || !strings.Contains(w[0].(string), "schema major 3") {
			t.Fatalf("warnings for an unknown major: %v", patched["warnings"])
		}
		var raw map[string]json.RawMessage
		acme.json("GET", "/v1/subscriptions/"+sub.ID, "", 200, &raw)
		if _, ok := raw["warnings"]; ok {
			t.Fatal("GET carries warnings")
		}
	})
}

func TestManifests_AdminListsSources(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		ctx := context.Background()
		good := `{"version":"1.0.0","publisher":{"serviceName":"ledger","source":"//midaz/ledger"},"topic":"t","events":[{"key":"a.b","resourceType":"a","eventType":"b","schemaVersion":"1.0.0"}]}`
		h.store.RecordManifestFetch(ctx, "http://a/m", h.clock.Now(), []byte(good), "")
		h.store.RecordManifestFetch(ctx, "http://b/m", h.clock.Now(), nil, "connection refused")
		var got struct{ Data []map[string]any }
		h.admin.json("GET", "/v1/admin/manifests", "", 200, &got)
		if len(got.Data) != 2 || got.Data[0]["event_count"] != 1.0 || got.Data[0]["last_error"] != nil ||
			got.Data[1]["last_error"] != "connection refused" || got.Data[1]["event_count"] != 0.0 || got.Data[1]["last_success_at"] != nil {
			t.Fatalf("manifests %v", got.Data)
		}
		status, _, b := acme.do("GET", "/v1/admin/manifests", "")
		wantError(t, status, b, 403, "forbidden")
	})
}

func TestLookup_AdminFindsTheTenantOfADeepLinkedResource(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		sub, _ := verified(acme, newReceiver(t))
		ingestEvents(t, h.store, storetest.NewEvent("acme", "evt-1"), storetest.NewEvent("globex", "evt-1"))
		var jobs struct{ Data []struct{ ID string } }
		acme.json("GET", "/v1/deliveries", "", 200, &jobs)
		if len(jobs.Data) != 1 {
			t.Fatalf("acme's deliveries: %+v", jobs)
		}
		type found struct {
			Kind      string   `json:"kind"`
			ID        string   `json:"id"`
			TenantIDs []string `json:"tenant_ids"`
		}
		for _, c := range []struct{ q, want string }{
			{"kind=delivery&id=" + jobs.Data[0].ID, "acme"},
			{"kind=subscription&id=" + sub, "acme"},
			{"kind=event&id=evt-1", "acme,globex"},
			{"kind=delivery&id=dlv_nothing", ""},
		} {
			var got found
			h.admin.json("GET", "/v1/admin/lookup?"+c.q, "", 200, &got)
			if strings.Join(got.TenantIDs, ",") != c.want || got.TenantIDs == nil || got.Kind == "" || got.ID == "" {
				t.Errorf("lookup %s = %+v, want tenants %q", c.q, got, c.want)
			}
		}
		for _, q := range []string{"kind=tenant&id=acme", "kind=delivery", "id=evt-1"} {
			status, _, b := h.admin.do("GET", "/v1/admin/lookup?"+q, "")
			wantError(t, status, b, 400, "invalid")
		}
		status, _, b := globex.do("GET", "/v1/admin/lookup?kind=subscription&id="+sub, "")
		wantError(t, status, b, 403, "forbidden")
	})
}
