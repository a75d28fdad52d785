package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	hubpkg "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// hostile is what an attacker puts in a payload, a response body, a name
// or a header.
const hostile = `<script>alert(1)</script><img src=x onerror=alert(1)>`

// ingest stores an event for tenant (matched to its subscriptions).
func (h *hub) ingest(ev hubpkg.Event, rejected ...hubpkg.Rejection) {
	h.t.Helper()
	if _, err := h.store.Ingest(context.Background(), store.IngestParams{Events: []hubpkg.Event{ev}, Rejected: rejected}); err != nil {
		h.t.Fatal(err)
	}
}

// jobOf is the first delivery of event ceID.
func (h *hub) jobOf(tenant, ceID string) string {
	h.t.Helper()
	st, b := h.apiCall("GET", "/v1/events/"+url.PathEscape(ceID), "", tenant)
	if st != 200 {
		h.t.Fatalf("event %s: %d %s", ceID, st, b)
	}
	m := regexp.MustCompile(`"deliveries":\[\{"id":"([^"]+)"`).FindStringSubmatch(b)
	if m == nil {
		h.t.Fatalf("event %s has no delivery: %s", ceID, b)
	}
	return m[1]
}

// world is two tenants, a verified subscription each, an event and its
// delivery for acme.
type world struct {
	h                  *hub
	acmeKey, globexKey string
	acmeSub, globexSub string
	job                string
}

func newWorld(t *testing.T, d testkit.Driver, o options) world {
	h := newHub(t, d, o)
	w := world{h: h, acmeKey: h.tenant("acme"), globexKey: h.tenant("globex")}
	rc := receiver(t, "ok")
	w.acmeSub = h.subscription("acme", "acme-hooks", rc.URL)
	w.globexSub = h.subscription("globex", "globex-hooks", rc.URL)
	h.ingest(storetest.NewEvent("acme", "evt-1"))
	w.job = h.jobOf("acme", "evt-1")
	return w
}

func TestPages_RenderForAdminAndTenant_OperatorPagesAdminOnly(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		w := newWorld(t, d, options{})
		tenantPages := []string{"/console/", "/console/subscriptions", "/console/subscriptions/new",
			"/console/subscriptions/" + w.acmeSub, "/console/subscriptions/" + w.acmeSub + "/edit",
			"/console/subscriptions/" + w.acmeSub + "?window=1h",
			"/console/deliveries", "/console/deliveries?status=pending&event_id=evt-1",
			"/console/deliveries/" + w.job, "/console/events", "/console/events/evt-1", "/console/event-types"}
		operatorPages := []string{"/console/tenants", "/console/tenants/acme", "/console/tenants/globex", "/console/rejections", "/console/dlq", "/console/manifests"}

		tenant := w.h.signIn(w.acmeKey)
		for _, p := range tenantPages {
			if got := tenant.get(p); got.status != 200 || !strings.Contains(got.body, "</html>") {
				t.Errorf("tenant GET %s: %d\n%s", p, got.status, got.body)
			}
		}
		for _, p := range operatorPages {
			if got := tenant.get(p); got.status != http.StatusForbidden {
				t.Errorf("tenant GET %s: %d, want 403", p, got.status)
			}
		}
		// Where sequence numbers are, why a receiver sees gaps in them.
		if got := tenant.get("/console/events"); !strings.Contains(got.body, `id="sequence-note"`) ||
			!strings.Contains(got.body, "the hub's own included") || !strings.Contains(got.body, "gaps in <code>X-Lerian-Sequence</code>") {
			t.Errorf("the events page does not explain sequence gaps:\n%s", got.body)
		}
		if got := tenant.get("/console/events/evt-1"); !strings.Contains(got.body, "tx-evt-1") || !strings.Contains(got.body, w.job) {
			t.Errorf("event page lacks the subject or the delivery:\n%s", got.body)
		}

		admin := w.h.signIn(adminToken)
		for _, p := range operatorPages {
			if got := admin.get(p); got.status != 200 {
				t.Errorf("admin GET %s: %d\n%s", p, got.status, got.body)
			}
		}
		if got := admin.get("/console/"); !strings.Contains(got.body, "Ingest verdicts") || !strings.Contains(got.body, "Breakers open") {
			t.Errorf("operator overview:\n%s", got.body)
		}
		// Tenant pages ask the admin to choose a tenant, then show it.
		if got := admin.get("/console/subscriptions"); got.status != 200 || !strings.Contains(got.body, "Choose the tenant") {
			t.Errorf("admin without a tenant: %d\n%s", got.status, got.body)
		}
		if got := admin.submit("/console/subscriptions", "/console/tenant", url.Values{"tenant": {"acme"}, "back": {"/console/subscriptions"}}); got.status != 303 || got.header.Get("Location") != "/console/subscriptions" {
			t.Fatalf("choosing a tenant: %d %s", got.status, got.header.Get("Location"))
		}
		for _, p := range tenantPages {
			if got := admin.get(p); got.status != 200 {
				t.Errorf("admin on acme GET %s: %d\n%s", p, got.status, got.body)
			}
		}
		if got := admin.get("/console/subscriptions"); !strings.Contains(got.body, "acme-hooks") || strings.Contains(got.body, "globex-hooks") {
			t.Errorf("admin on acme sees:\n%s", got.body)
		}
	})
}

func TestPages_AnotherTenantsObjectIsThe404Page(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		w := newWorld(t, d, options{})
		globex := w.h.signIn(w.globexKey)
		for _, p := range []string{"/console/subscriptions/" + w.acmeSub, "/console/subscriptions/" + w.acmeSub + "/edit",
			"/console/deliveries/" + w.job, "/console/events/evt-1", "/console/no-such-page"} {
			got := globex.get(p)
			if got.status != 404 || !strings.Contains(got.body, "<h1>Not found</h1>") || strings.Contains(got.body, "acme-hooks") {
				t.Errorf("globex GET %s: %d\n%s", p, got.status, got.body)
			}
		}
		csrf := globex.csrf("/console/")
		for _, action := range []string{"/console/subscriptions/" + w.acmeSub + "/delete", "/console/subscriptions/" + w.acmeSub + "/disable",
			"/console/deliveries/" + w.job + "/replay", "/console/subscriptions/" + w.acmeSub + "/test"} {
			if got := globex.post(action, url.Values{"csrf": {csrf}}); got.status != 404 {
				t.Errorf("globex POST %s: %d, want 404", action, got.status)
			}
		}
		if st, _ := w.h.apiCall("GET", "/v1/subscriptions/"+w.acmeSub, "", "acme"); st != 200 {
			t.Errorf("acme's subscription after globex's attempts: %d", st)
		}
		// Signed out: every page sends to the sign-in page.
		anon := w.h.browser()
		if got := anon.get("/console/subscriptions"); got.status != 303 || got.header.Get("Location") != "/console/signin" {
			t.Errorf("signed out: %d %s", got.status, got.header.Get("Location"))
		}
	})
}

func TestCSRF_WritesWithoutTheTokenOrFromAnotherSiteAreRefused(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		w := newWorld(t, d, options{})
		b := w.h.signIn(w.acmeKey)
		csrf := b.csrf("/console/subscriptions/" + w.acmeSub)
		action := "/console/subscriptions/" + w.acmeSub + "/disable"
		for name, tc := range map[string]struct {
			form    url.Values
			headers []string
		}{
			"no token":                {url.Values{}, nil},
			"wrong token":             {url.Values{"csrf": {"x" + csrf}}, nil},
			"cross-site Sec-Fetch":    {url.Values{"csrf": {csrf}}, []string{"Sec-Fetch-Site", "cross-site"}},
			"same-site Sec-Fetch":     {url.Values{"csrf": {csrf}}, []string{"Sec-Fetch-Site", "same-site"}},
			"another Origin":          {url.Values{"csrf": {csrf}}, []string{"Origin", "https://evil.example"}},
			"null Origin":             {url.Values{"csrf": {csrf}}, []string{"Origin", "null"}},
			"another session's token": {url.Values{"csrf": {w.h.signIn(w.acmeKey).csrf("/console/")}}, nil},
		} {
			if got := b.post(action, tc.form, tc.headers...); got.status != http.StatusForbidden {
				t.Errorf("%s: %d, want 403", name, got.status)
			}
		}
		if st, body := w.h.apiCall("GET", "/v1/subscriptions/"+w.acmeSub, "", "acme"); st != 200 || !strings.Contains(body, `"enabled":true`) {
			t.Fatalf("a refused write changed the subscription: %s", body)
		}
		// A cross-site form carries no cookie (SameSite=Strict): refused too.
		anon := w.h.browser()
		if got := anon.post(action, url.Values{}, "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); got.status != http.StatusForbidden {
			t.Errorf("cross-site without a session: %d, want 403", got.status)
		}
		// The sign-in form has its token too.
		if got := anon.post("/console/signin", url.Values{"token": {adminToken}}); got.status != http.StatusForbidden {
			t.Errorf("sign-in without its token: %d, want 403", got.status)
		}
		// With the token, from this site, the write happens.
		if got := b.post(action, url.Values{"csrf": {csrf}}); got.status != 303 {
			t.Fatalf("disable with the token: %d\n%s", got.status, got.body)
		}
		if _, body := w.h.apiCall("GET", "/v1/subscriptions/"+w.acmeSub, "", "acme"); !strings.Contains(body, `"enabled":false`) {
			t.Errorf("not disabled: %s", body)
		}
	})
}

func TestSecurityHeaders_OnEveryConsoleAnswer(t *testing.T) {
	h := newHub(t, testkit.Drivers[1], options{})
	b := h.browser()
	for _, p := range []string{"/console/signin", "/console/", "/console/static/console.css", "/console/nope", "/console/portal/nope", "/console"} {
		got := b.get(p)
		csp := got.header.Get("Content-Security-Policy")
		if !strings.HasPrefix(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || got.header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s (%d): CSP %q, XFO %q", p, got.status, csp, got.header.Get("X-Frame-Options"))
		}
	}
	// No inline script: every <script> has a src.
	page := b.get("/console/signin")
	if regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]`).MatchString(page.body) || strings.Contains(page.body, " style=") || strings.Contains(page.body, " onclick") {
		t.Errorf("inline script or style:\n%s", page.body)
	}

	embed := newHub(t, testkit.Drivers[1], options{frameAncestors: "https://app.example.com"})
	got := embed.browser().get("/console/signin")
	if csp := got.header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors https://app.example.com") || got.header.Get("X-Frame-Options") != "" {
		t.Errorf("embeddable: CSP %q, XFO %q", csp, got.header.Get("X-Frame-Options"))
	}
	// The API's own answers are unchanged.
	if st, _ := h.apiCall("GET", "/v1/tenants", "", ""); st != 200 {
		t.Errorf("API beside the console: %d", st)
	}
}

func TestSignIn_CookieAttributesThrottleAndBadTokens(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{authLimit: 3})
		key := h.tenant("acme")
		b := h.browser()
		csrf := b.csrf("/console/signin")
		// Behind a TLS proxy the browser's origin is https (docs/security.md: the
		// Origin check compares the scheme too).
		got := b.post("/console/signin", url.Values{"csrf": {csrf}, "token": {adminToken}},
			"X-Forwarded-Proto", "https", "Origin", strings.Replace(h.url, "http://", "https://", 1))
		ck := cookieOf(got, "hub_console")
		if got.status != 303 || ck == nil || !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console/" {
			t.Fatalf("sign-in over https: %d, cookie %+v", got.status, ck)
		}
		plain := h.browser()
		got = plain.post("/console/signin", url.Values{"csrf": {plain.csrf("/console/signin")}, "token": {key}})
		if ck := cookieOf(got, "hub_console"); got.status != 303 || ck == nil || ck.Secure || !ck.HttpOnly {
			t.Fatalf("sign-in over http: %d, cookie %+v", got.status, ck)
		}
		// Only the token's hash is stored.
		if _, err := h.store.TouchConsoleSession(context.Background(), cookieOf(got, "hub_console").Value, time.Hour); hubpkg.ErrorCode(err) != hubpkg.ENOTFOUND {
			t.Error("the session token itself is stored")
		}

		bad := h.browser()
		for i := range 4 {
			got := bad.post("/console/signin", url.Values{"csrf": {bad.csrf("/console/signin")}, "token": {"sh_nope.wrong"}})
			if got.status != http.StatusUnauthorized || cookieOf(got, "hub_console") != nil {
				t.Fatalf("bad token %d: %d", i, got.status)
			}
		}
		got = bad.post("/console/signin", url.Values{"csrf": {bad.csrf("/console/signin")}, "token": {adminToken}})
		if got.status != http.StatusTooManyRequests || cookieOf(got, "hub_console") != nil {
			t.Fatalf("after 4 failures: %d, want 429 (the API's throttle)", got.status)
		}
		h.clock.Advance(time.Minute)
		got = bad.post("/console/signin", url.Values{"csrf": {bad.csrf("/console/signin")}, "token": {adminToken}})
		if got.status != 303 {
			t.Fatalf("a minute later: %d", got.status)
		}
		// An inactive tenant's key signs in as the API lets it in: not at all.
		h.apiCall("PATCH", "/v1/tenants/acme", `{"status":"inactive"}`, "")
		ina := h.browser()
		if got := ina.post("/console/signin", url.Values{"csrf": {ina.csrf("/console/signin")}, "token": {key}}); got.status != http.StatusForbidden {
			t.Errorf("inactive tenant's key: %d, want 403", got.status)
		}
	})
}

func cookieOf(p page, name string) *http.Cookie {
	for _, c := range (&http.Response{Header: p.header}).Cookies() {
		if c.Name == name && c.MaxAge >= 0 && c.Value != "" {
			return c
		}
	}
	return nil
}

func TestSession_ExpiresAfter12HoursIdleSurvivesRestartEndsWithItsKey(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		// The absolute lifetime (12 h by default) is set longer here: this
		// is the idle limit's test.
		h := newHub(t, d, options{sessionMaxAge: 48 * time.Hour})
		key := h.tenant("acme")
		b := h.signIn(adminToken)
		h.clock.Advance(11 * time.Hour)
		if got := b.get("/console/"); got.status != 200 {
			t.Fatalf("after 11 h: %d", got.status)
		}
		h.clock.Advance(11*time.Hour + 59*time.Minute) // 23 h since sign-in, 11:59 idle
		if got := b.get("/console/"); got.status != 200 {
			t.Fatalf("used within 12 h: %d", got.status)
		}
		// A restart (or another replica) over the same store knows it.
		other := serve(t, h.store, h.clock, options{})
		b2 := &browser{t: t, base: other.url, c: b.c}
		u, _ := url.Parse(h.url)
		u2, _ := url.Parse(other.url)
		b.c.Jar.SetCookies(u2, b.c.Jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: "/console/"}))
		if got := b2.get("/console/"); got.status != 200 {
			t.Fatalf("on another server: %d", got.status)
		}
		h.clock.Advance(12*time.Hour + time.Second)
		if got := b.get("/console/"); got.status != 303 || got.header.Get("Location") != "/console/signin" {
			t.Fatalf("after 12 h idle: %d %s", got.status, got.header.Get("Location"))
		}

		// Deleting the key ends the sessions it opened.
		tb := h.signIn(key)
		_, keys := h.apiCall("GET", "/v1/tenants/acme/keys", "", "")
		kid := field(keys, "id")
		if st, b := h.apiCall("DELETE", "/v1/tenants/acme/keys/"+kid, "", ""); st != 204 && st != 200 {
			t.Fatalf("delete key: %d %s", st, b)
		}
		if got := tb.get("/console/"); got.status != 303 {
			t.Errorf("after its key was deleted: %d", got.status)
		}
		// Signing out ends the session.
		a := h.signIn(adminToken)
		a.submit("/console/", "/console/signout", nil)
		if got := a.get("/console/"); got.status != 303 {
			t.Errorf("after signing out: %d", got.status)
		}
	})
}

func TestPortalLinks_OneTenantSessionUntilExpiry(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		w := newWorld(t, d, options{})
		h := w.h
		st, body := h.apiCall("POST", "/v1/tenants/acme/portal-links", `{"ttl":"1h"}`, "")
		if st != 201 {
			t.Fatalf("portal link: %d %s", st, body)
		}
		link := field(body, "url")
		b := h.browser()
		got := b.openPortal(link)
		if got.status != 303 || got.header.Get("Location") != "/console/" || cookieOf(got, "hub_console") == nil {
			t.Fatalf("open portal link: %d %s\n%s", got.status, got.header.Get("Location"), got.body)
		}
		if got := b.get("/console/"); got.status != 200 || !strings.Contains(got.body, "tenant acme") || !strings.Contains(got.body, "acme-hooks") {
			t.Fatalf("portal overview: %d\n%s", got.status, got.body)
		}
		if got := b.get("/console/subscriptions/" + w.globexSub); got.status != 404 {
			t.Errorf("portal session on globex's subscription: %d", got.status)
		}
		if got := b.get("/console/tenants"); got.status != 403 {
			t.Errorf("portal session on the operator pages: %d", got.status)
		}
		// The same link from the console's tenant page.
		admin := h.signIn(adminToken)
		got = admin.submit("/console/tenants/acme", "/console/tenants/acme/portal-link", url.Values{"ttl": {"15m"}})
		if got.status != 201 || !strings.Contains(got.body, "/console/portal/") {
			t.Fatalf("portal link from the console: %d\n%s", got.status, got.body)
		}

		_, body = h.apiCall("POST", "/v1/tenants/acme/portal-links", `{"ttl":"30m"}`, "")
		unopened := field(body, "url")
		h.clock.Advance(time.Hour)
		late := h.browser()
		got = late.get(unopened)
		if got.status != 404 || cookieOf(got, "hub_console") != nil || !strings.Contains(got.body, "expired") {
			t.Fatalf("expired link: %d\n%s", got.status, got.body)
		}
		if got := late.get("/console/"); got.status != 303 {
			t.Errorf("an expired link opened a session: %d", got.status)
		}
		_, body = h.apiCall("POST", "/v1/tenants/acme/portal-links", "", "")
		fresh, freshID := field(body, "url"), field(body, "id")
		if st, body := h.apiCall("DELETE", "/v1/tenants/acme/portal-links/"+freshID, "", ""); st != 204 {
			t.Fatalf("revoke: %d %s", st, body)
		}
		if got := h.browser().get(fresh); got.status != 404 || cookieOf(got, "hub_console") != nil {
			t.Errorf("revoked link: %d", got.status)
		}
		if got := h.browser().get("/console/portal/" + strings.Repeat("A", 43)); got.status != 404 {
			t.Errorf("unknown link: %d", got.status)
		}
	})
}
