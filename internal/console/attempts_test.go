package console_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	hubpkg "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/apikey"
	"github.com/lerianstudio/streaming-hub/internal/config"
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

// A replayed dead letter's row says "replayed", when and by whom, and
// links to the fresh delivery; the bulk replay's page says what it queued
// and, when nothing, why.
func TestReplay_DeadLetterRowsAreMarkedAndTheCountExplained(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		key := h.tenant("acme")
		keyID, _, _ := apikey.Parse(key)
		rc := receiver(t, "ok")
		sub := h.subscription("acme", "hooks", rc.URL)
		h.ingest(storetest.NewEvent("acme", "evt-1"))
		now := h.clock.Now()
		dead := h.attempt(hubpkg.JobDeadLettered, &hubpkg.Attempt{ID: hubpkg.NewID("att", now), StartedAt: now, StatusCode: 500,
			Error: "destination answered 500"})
		b := h.signIn(key)
		page := "/console/subscriptions/" + sub

		got := b.submit(page, page+"/replay", nil)
		if got.status != 202 || !strings.Contains(got.body, "Queued 1 dead letter again.") ||
			!strings.Contains(got.body, "Matching dead letters: 1; already replayed, so skipped: 0.") || strings.Contains(got.body, "Why none") {
			t.Fatalf("bulk replay: %d\n%s", got.status, got.body)
		}
		_, body := h.apiCall("GET", "/v1/deliveries/"+dead, "", "acme")
		fresh := field(body, "replayed_as")
		if fresh == "" {
			t.Fatalf("the dead letter is not marked: %s", body)
		}
		mark := regexp.MustCompile(`<a href="/console/deliveries/` + regexp.QuoteMeta(fresh) + `">replayed</a> <time datetime="[0-9T:.Z-]+" title="[0-9T:.Z-]+">[^<]+</time> by <code>` + regexp.QuoteMeta(keyID) + `</code>`)
		for _, p := range []string{page, "/console/deliveries?status=dead_lettered", "/console/events/evt-1"} {
			if got := b.get(p); !mark.MatchString(got.body) {
				t.Errorf("%s: the dead letter's row does not say replayed, when, by %s, linking to %s:\n%s", p, keyID, fresh, got.body)
			}
		}
		if got := b.get("/console/deliveries/" + dead); !strings.Contains(got.body, "<dt>Replayed</dt>") || !strings.Contains(got.body, fresh) {
			t.Errorf("the dead letter's page does not say it was replayed as %s:\n%s", fresh, got.body)
		}

		got = b.submit(page, page+"/replay", nil)
		if got.status != 202 || !strings.Contains(got.body, "Queued 0 dead letters again.") ||
			!strings.Contains(got.body, "Why none: the 1 matching dead letter was already replayed.") {
			t.Fatalf("bulk replay again: %d\n%s", got.status, got.body)
		}
	})
}

// A replay from a console session opened with an access-manager JWT is
// marked with the token's subject, as the API marks the token's own calls.
func TestReplay_FromAJWTSessionIsMarkedWithItsSubject(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			json.NewEncoder(w).Encode(map[string]bool{"authorized": true})
		}))
		t.Cleanup(am.Close)
		h := newHub(t, d, options{auth: config.Auth{Enabled: true, Address: am.URL, Timeout: testkit.Scaled(5 * time.Second),
			Keys: []*rsa.PublicKey{&key.PublicKey}}})
		h.tenant("acme")
		rc := receiver(t, "ok")
		h.subscription("acme", "hooks", rc.URL)
		h.ingest(storetest.NewEvent("acme", "evt-1"))
		now := h.clock.Now()
		dead := h.attempt(hubpkg.JobDeadLettered, &hubpkg.Attempt{ID: hubpkg.NewID("att", now), StartedAt: now, StatusCode: 500,
			Error: "destination answered 500"})
		b := h.signIn(mintJWT(t, key, map[string]any{"type": "normal-user", "owner": "lerian", "sub": "alice", "tenantId": "acme",
			"exp": now.Add(time.Hour).Unix()}))
		if got := b.submit("/console/deliveries/"+dead, "/console/deliveries/"+dead+"/replay", nil); got.status != 303 {
			t.Fatalf("replay: %d\n%s", got.status, got.body)
		}
		if _, body := h.apiCall("GET", "/v1/deliveries/"+dead, "", "acme"); field(body, "replayed_by") != "lerian/alice" {
			t.Fatalf("replayed_by, want the session's subject lerian/alice: %s", body)
		}
	})
}

// A delivery's page shows its event's payload, pretty-printed and escaped,
// cut at 64 KiB with a note; times are written absolute beside relative;
// no last error reads "none".
func TestDelivery_ShowsThePayloadBoundedAndEscaped(t *testing.T) {
	h := newHub(t, testkit.Drivers[1], options{})
	key := h.tenant("acme")
	rc := receiver(t, "ok")
	h.subscription("acme", "hooks", rc.URL)
	e := storetest.NewEvent("acme", "evt-1")
	e.Data, _ = json.Marshal(map[string]string{"note": hostile})
	big := storetest.NewEvent("acme", "evt-2")
	big.Data, _ = json.Marshal(map[string]string{"pad": strings.Repeat("x", 70<<10)})
	h.ingest(e)
	h.ingest(big)
	now := h.clock.Now()
	job := h.attempt(hubpkg.JobSucceeded, &hubpkg.Attempt{ID: hubpkg.NewID("att", now), StartedAt: now, StatusCode: 200})
	b := h.signIn(key)
	got := b.get("/console/deliveries/" + job)
	assertInert(t, "delivery", got.body)
	for _, want := range []string{`<pre id="payload">{
  &#34;note&#34;: &#34;&lt;script&gt;`, "Last error</dt><dd>none</dd>", `<span class="abs">` + now.UTC().Format("2006-01-02 15:04:05Z")} {
		if !strings.Contains(got.body, want) {
			t.Fatalf("delivery page lacks %q:\n%s", want, got.body)
		}
	}
	if strings.Contains(got.body, "Cut at 64 KiB") {
		t.Fatal("a small payload is said to be cut")
	}
	job2 := h.attempt(hubpkg.JobSucceeded, &hubpkg.Attempt{ID: hubpkg.NewID("att", now), StartedAt: now, StatusCode: 200})
	got = b.get("/console/deliveries/" + job2)
	if !strings.Contains(got.body, "Cut at 64 KiB") || strings.Count(got.body, "x") > 66<<10 || strings.Count(got.body, "x") < 60<<10 {
		t.Fatalf("a 70 KiB payload is not cut at 64 KiB: %d bytes", len(got.body))
	}
}
