package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestPortalLinks_AdminOnlyTTLBoundedStoredHashed(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		var link struct {
			URL       string    `json:"url"`
			ExpiresAt time.Time `json:"expires_at"`
		}
		h.admin.json("POST", "/v1/tenants/acme/portal-links", `{"ttl":"2h"}`, 201, &link)
		token, ok := strings.CutPrefix(link.URL, "/console/portal/")
		if !ok || len(token) < 40 || !link.ExpiresAt.Equal(h.clock.Now().UTC().Truncate(time.Microsecond).Add(2*time.Hour)) {
			t.Fatalf("link %+v", link)
		}
		got, err := h.store.GetPortalLink(t.Context(), store.HashToken(token))
		if err != nil || got.TenantID != "acme" || got.Revoked {
			t.Fatalf("stored link %+v, %v", got, err)
		}
		if _, err := h.store.GetPortalLink(t.Context(), token); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatal("the token itself is stored: only its hash may be")
		}
		// No body: one hour.
		h.admin.json("POST", "/v1/tenants/acme/portal-links", "", 201, &link)
		if !link.ExpiresAt.Equal(h.clock.Now().UTC().Truncate(time.Microsecond).Add(time.Hour)) {
			t.Fatalf("default ttl: expires %v", link.ExpiresAt)
		}
		for _, body := range []string{`{"ttl":"25h"}`, `{"ttl":"0s"}`, `{"ttl":"-1h"}`, `{"ttl":"soon"}`, `{"ttl":5}`} {
			status, _, b := h.admin.do("POST", "/v1/tenants/acme/portal-links", body)
			if status != 400 || !strings.Contains(string(b), "ttl") {
				t.Errorf("%s: %d %s, want 400 naming ttl", body, status, b)
			}
		}
		if status, _, _ := h.admin.do("POST", "/v1/tenants/ghost/portal-links", ""); status != 404 {
			t.Errorf("unknown tenant: %d, want 404", status)
		}
		if status, _, _ := acme.do("POST", "/v1/tenants/acme/portal-links", ""); status != 403 {
			t.Errorf("tenant key: %d, want 403", status)
		}
	})
}

// docs/security.md: the create answer has the link's id; the list shows live
// links (id, created_at, expires_at, used_at), never a token; DELETE revokes
// one and ends the session it opened; another tenant's link is a 404.
func TestPortalLinks_ListedAndRevokedByID(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		h.tenant("globex")
		type created struct {
			ID        string    `json:"id"`
			URL       string    `json:"url"`
			ExpiresAt time.Time `json:"expires_at"`
		}
		var first, second, theirs created
		h.admin.json("POST", "/v1/tenants/acme/portal-links", `{"ttl":"1h"}`, 201, &first)
		h.clock.Advance(time.Second)
		h.admin.json("POST", "/v1/tenants/acme/portal-links", `{"ttl":"2h"}`, 201, &second)
		h.admin.json("POST", "/v1/tenants/globex/portal-links", "", 201, &theirs)
		if !strings.HasPrefix(first.ID, "pl_") || first.ID == second.ID {
			t.Fatalf("ids %q %q", first.ID, second.ID)
		}
		token := strings.TrimPrefix(first.URL, "/console/portal/")

		// The first link is opened (as the console does).
		now := h.clock.Now().UTC().Truncate(time.Microsecond)
		s := store.ConsoleSession{TokenHash: "session-1", CSRFHash: "c", CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(time.Hour), EndsAt: now.Add(12 * time.Hour)}
		if _, err := h.store.OpenPortalLink(t.Context(), store.HashToken(token), s); err != nil {
			t.Fatal(err)
		}

		type listed struct {
			Data []struct {
				ID        string     `json:"id"`
				CreatedAt time.Time  `json:"created_at"`
				ExpiresAt time.Time  `json:"expires_at"`
				UsedAt    *time.Time `json:"used_at"`
			} `json:"data"`
			NextCursor *string `json:"next_cursor"`
		}
		var list listed
		status, _, raw := h.admin.do("GET", "/v1/tenants/acme/portal-links", "")
		if status != 200 || json.Unmarshal(raw, &list) != nil {
			t.Fatalf("list: %d %s", status, raw)
		}
		if len(list.Data) != 2 || list.Data[0].ID != first.ID || list.Data[1].ID != second.ID || list.NextCursor != nil ||
			list.Data[0].UsedAt == nil || !list.Data[0].UsedAt.Equal(now) || list.Data[1].UsedAt != nil ||
			!list.Data[1].ExpiresAt.Equal(second.ExpiresAt) || list.Data[0].CreatedAt.IsZero() {
			t.Fatalf("list %s", raw)
		}
		if strings.Contains(string(raw), token) || strings.Contains(string(raw), "url") || !strings.Contains(string(raw), `"used_at":null`) {
			t.Fatalf("the list shows a link, or hides used_at: %s", raw)
		}
		h.admin.json("GET", "/v1/tenants/acme/portal-links?limit=1", "", 200, &list)
		if len(list.Data) != 1 || list.NextCursor == nil {
			t.Fatalf("first page %+v", list)
		}
		h.admin.json("GET", "/v1/tenants/acme/portal-links?limit=1&cursor="+*list.NextCursor, "", 200, &list)
		if len(list.Data) != 1 || list.Data[0].ID != second.ID || list.NextCursor != nil {
			t.Fatalf("second page %+v", list)
		}

		for _, c := range []struct {
			who          *client
			method, path string
			want         int
		}{
			{&acme, "GET", "/v1/tenants/acme/portal-links", 403},
			{&acme, "DELETE", "/v1/tenants/acme/portal-links/" + first.ID, 403},
			{&h.admin, "GET", "/v1/tenants/ghost/portal-links", 404},
			{&h.admin, "DELETE", "/v1/tenants/acme/portal-links/pl_nope", 404},
			{&h.admin, "DELETE", "/v1/tenants/acme/portal-links/" + theirs.ID, 404},
			{&h.admin, "DELETE", "/v1/tenants/globex/portal-links/" + first.ID, 404},
		} {
			if status, _, b := c.who.do(c.method, c.path, ""); status != c.want {
				t.Errorf("%s %s: %d %s, want %d", c.method, c.path, status, b, c.want)
			}
		}
		if _, err := h.store.TouchConsoleSession(t.Context(), "session-1", time.Hour); err != nil {
			t.Fatalf("the session before its link was revoked: %v", err)
		}
		if status, _, b := h.admin.do("DELETE", "/v1/tenants/acme/portal-links/"+first.ID, ""); status != 204 || len(b) != 0 {
			t.Fatalf("revoke: %d %s", status, b)
		}
		if _, err := h.store.TouchConsoleSession(t.Context(), "session-1", time.Hour); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("the revoked link's session: %v, want it ended", err)
		}
		if status, _, _ := h.admin.do("DELETE", "/v1/tenants/acme/portal-links/"+first.ID, ""); status != 404 {
			t.Errorf("revoking twice: %d, want 404", status)
		}
		h.admin.json("GET", "/v1/tenants/acme/portal-links", "", 200, &list)
		if len(list.Data) != 1 || list.Data[0].ID != second.ID {
			t.Fatalf("after revoking: %+v", list)
		}
		// Expired links are not listed, and cannot be revoked.
		h.clock.Advance(2 * time.Hour)
		h.admin.json("GET", "/v1/tenants/acme/portal-links", "", 200, &list)
		if len(list.Data) != 0 {
			t.Fatalf("expired links listed: %+v", list)
		}
		if status, _, _ := h.admin.do("DELETE", "/v1/tenants/acme/portal-links/"+second.ID, ""); status != 404 {
			t.Errorf("revoking an expired link: %d, want 404", status)
		}
	})
}

// docs/security.md: the request log and the spans never hold a portal link's
// token.
func TestPortalLinks_PathsLoggedWithoutTheToken(t *testing.T) {
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{})
	token := store.NewToken()
	for _, p := range []string{"/console/portal/" + token, "/console/portal/" + token + "/more"} {
		res, err := http.Get(h.url + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	logs := h.logs.String()
	if strings.Contains(logs, token) || strings.Count(logs, `"path":"/console/portal/…"`) != 2 {
		t.Fatalf("log:\n%s", logs)
	}
	// Nor does the request's span.
	spans := tracetest.NewSpanRecorder()
	srv, err := api.New(api.Deps{Metrics: metrics.New(), Pull: config.Defaults(config.Serve).Pull, AuthFailureLimit: 1, HealthWindow: time.Hour,
		Tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("test")})
	if err != nil {
		t.Fatal(err)
	}
	srv.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/console/portal/"+token, nil))
	ended := spans.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans", len(ended))
	}
	path := ""
	for _, a := range ended[0].Attributes() {
		if strings.Contains(a.Value.Emit(), token) {
			t.Errorf("span attribute %s = %q", a.Key, a.Value.Emit())
		}
		if a.Key == "url.path" {
			path = a.Value.AsString()
		}
	}
	if path != "/console/portal/…" {
		t.Errorf("url.path = %q", path)
	}
	for in, want := range map[string]string{
		"/console/portal/abc": "/console/portal/…", "/console/portal/": "/console/portal/",
		"/console/portals": "/console/portals", "/v1/tenants": "/v1/tenants", "/console/": "/console/",
	} {
		if got := api.LoggedPath(in); got != want {
			t.Errorf("LoggedPath(%q) = %q, want %q", in, got, want)
		}
	}
}
