package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	hubpkg "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// on is b's cookies on another server over the same store (a restart, or
// another replica).
func (b *browser) on(other *hub) *browser {
	from, _ := url.Parse(b.base)
	to, _ := url.Parse(other.url)
	b.c.Jar.SetCookies(to, b.c.Jar.Cookies(&url.URL{Scheme: "http", Host: from.Host, Path: "/console/"}))
	return &browser{t: b.t, base: other.url, c: b.c}
}

// session is the stored session of b's cookie.
func (b *browser) session(h *hub) (store.ConsoleSession, error) {
	u, _ := url.Parse(b.base)
	for _, ck := range b.c.Jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: "/console/"}) {
		if ck.Name == "hub_console" {
			return h.store.TouchConsoleSession(context.Background(), store.HashToken(ck.Value), time.Hour)
		}
	}
	return store.ConsoleSession{}, hubpkg.Errorf(hubpkg.ENOTFOUND, "no session cookie")
}

// docs/security.md: a session opened with the admin token stores the token's hash
// and ends when the hub's admin token changes; a key's session does not.
func TestSession_AdminSessionEndsWhenTheAdminTokenChanges(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		key := h.tenant("acme")
		admin := h.signIn(adminToken)
		tenant := h.signIn(key)
		cs, err := admin.session(h)
		if err != nil || cs.Kind != store.SessionAdmin || cs.AuthHash != store.HashToken(adminToken) {
			t.Fatalf("admin session %+v, %v", cs, err)
		}
		// The same token after a restart: still signed in.
		same := serve(t, h.store, h.clock, options{})
		if got := admin.on(same).get("/console/tenants"); got.status != 200 {
			t.Fatalf("after a restart with the same token: %d", got.status)
		}
		// Another token: the old cookie acts as nobody, and its session is
		// gone.
		rotated := serve(t, h.store, h.clock, options{adminToken: "a-new-admin-token"})
		if got := admin.on(rotated).get("/console/tenants"); got.status != 303 || got.header.Get("Location") != "/console/signin" {
			t.Fatalf("after the admin token changed: %d %s", got.status, got.header.Get("Location"))
		}
		if _, err := admin.session(h); hubpkg.ErrorCode(err) != hubpkg.ENOTFOUND {
			t.Fatalf("the old admin session is still stored: %v", err)
		}
		// Nor does it come back with the old token.
		if got := admin.get("/console/tenants"); got.status != 303 {
			t.Fatalf("the ended session on the old server: %d", got.status)
		}
		if got := tenant.on(rotated).get("/console/subscriptions"); got.status != 200 {
			t.Errorf("a key's session after the admin token changed: %d", got.status)
		}
		// The new token signs in.
		if got := rotated.signIn("a-new-admin-token").get("/console/tenants"); got.status != 200 {
			t.Errorf("signed in with the new token: %d", got.status)
		}
	})
}

// docs/security.md: every session has an absolute lifetime beside the idle limit,
// 12 h by default (STREAMING_HUB_CONSOLE_SESSION_MAX_AGE).
func TestSession_AbsoluteLifetime(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		key := h.tenant("acme")
		for name, token := range map[string]string{"admin": adminToken, "key": key} {
			b, start := h.signIn(token), h.clock.Now()
			for h.clock.Now().Sub(start) < 11*time.Hour {
				h.clock.Advance(time.Hour)
				if got := b.get("/console/"); got.status != 200 {
					t.Fatalf("%s session used hourly, at %v: %d", name, h.clock.Now().Sub(start), got.status)
				}
			}
			h.clock.Advance(time.Hour)
			if got := b.get("/console/"); got.status != 303 || got.header.Get("Location") != "/console/signin" {
				t.Errorf("%s session 12 h after sign-in: %d", name, got.status)
			}
		}
		short := newHub(t, d, options{sessionMaxAge: 30 * time.Minute})
		b := short.signIn(adminToken)
		short.clock.Advance(29 * time.Minute)
		if got := b.get("/console/"); got.status != 200 {
			t.Fatalf("before the max age: %d", got.status)
		}
		short.clock.Advance(time.Minute)
		if got := b.get("/console/"); got.status != 303 {
			t.Errorf("at a 30m max age: %d", got.status)
		}
	})
}

// docs/security.md: the CSRF token is stored hashed, never in clear, and the
// session's own token is the one accepted.
func TestSession_CSRFTokenStoredHashed(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		b := h.signIn(adminToken)
		csrf := b.csrf("/console/")
		cs, err := b.session(h)
		if err != nil || cs.CSRFHash != store.HashToken(csrf) || strings.Contains(cs.CSRFHash, csrf) {
			t.Fatalf("stored %+v, %v; page's token %q", cs, err, csrf)
		}
		if got := b.post("/console/signout", url.Values{"csrf": {cs.CSRFHash}}); got.status != http.StatusForbidden {
			t.Errorf("the stored hash as the token: %d, want 403", got.status)
		}
		if got := b.post("/console/signout", url.Values{"csrf": {csrf}}); got.status != 303 {
			t.Errorf("sign out with the page's token: %d", got.status)
		}
	})
}

// docs/security.md: a link opens one session, once; the GET only asks; the
// session ends at the link's expiry, whatever its use, or when it is revoked.
func TestPortal_SingleUseEndsWithTheLinkAndItsRevocation(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		h.tenant("acme")
		_, body := h.apiCall("POST", "/v1/tenants/acme/portal-links", `{"ttl":"1h"}`, "")
		link, id := field(body, "url"), field(body, "id")

		b, slow := h.browser(), h.browser()
		// slow shows the link's page too, and answers it after b.
		slowCSRF := slow.csrf(link)
		// Asking spends nothing.
		for range 2 {
			got := b.get(link)
			if got.status != 200 || cookieOf(got, "hub_console") != nil || !strings.Contains(got.body, "Continue as tenant acme") ||
				!strings.Contains(got.body, `method="post" action="`+link+`"`) {
				t.Fatalf("the link's page: %d\n%s", got.status, got.body)
			}
		}
		if got := b.openPortal(link); got.status != 303 {
			t.Fatalf("open: %d\n%s", got.status, got.body)
		}
		if got := b.get("/console/"); got.status != 200 || !strings.Contains(got.body, "tenant acme") {
			t.Fatalf("portal session: %d", got.status)
		}
		cs, err := b.session(h)
		if err != nil || cs.Kind != store.SessionPortal || cs.LinkID != id || cs.TenantID != "acme" {
			t.Fatalf("portal session %+v, %v", cs, err)
		}

		// A second open, in any browser, is refused: link already used.
		again := h.browser()
		for _, got := range []page{again.get(link), slow.post(link, url.Values{"csrf": {slowCSRF}})} {
			if got.status != 404 || !strings.Contains(got.body, "link already used") || cookieOf(got, "hub_console") != nil {
				t.Fatalf("second open: %d\n%s", got.status, got.body)
			}
		}
		// Used every few minutes, the session still ends with the link.
		for range 11 {
			h.clock.Advance(5 * time.Minute)
			if got := b.get("/console/"); got.status != 200 {
				t.Fatalf("before the link's expiry: %d", got.status)
			}
		}
		h.clock.Advance(5 * time.Minute)
		if got := b.get("/console/"); got.status != 303 {
			t.Fatalf("at the link's expiry: %d", got.status)
		}

		// Revoking a link ends the session it opened.
		_, body = h.apiCall("POST", "/v1/tenants/acme/portal-links", `{"ttl":"1h"}`, "")
		link, id = field(body, "url"), field(body, "id")
		c := h.browser()
		c.openPortal(link)
		if got := c.get("/console/"); got.status != 200 {
			t.Fatalf("second link's session: %d", got.status)
		}
		if st, body := h.apiCall("DELETE", "/v1/tenants/acme/portal-links/"+id, "", ""); st != 204 {
			t.Fatalf("revoke: %d %s", st, body)
		}
		if got := c.get("/console/"); got.status != 303 {
			t.Fatalf("after its link was revoked: %d", got.status)
		}
		// The log never holds a link's token.
		if logs := h.logs.String(); strings.Contains(logs, strings.TrimPrefix(link, "/console/portal/")) || !strings.Contains(logs, `"path":"/console/portal/…"`) {
			t.Errorf("log:\n%s", logs)
		}
	})
}

// docs/security.md: opening a link never silently replaces another session (login
// CSRF): the GET, even from another site, changes nothing; the POST must
// come from the link's own page.
func TestPortal_NeverReplacesASessionUnasked(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		h.tenant("acme")
		_, body := h.apiCall("POST", "/v1/tenants/acme/portal-links", "", "")
		link := field(body, "url")
		admin := h.signIn(adminToken)

		// Another site sends the admin's browser to the link.
		req, _ := http.NewRequest("GET", admin.base+link, nil)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		got := admin.do(req)
		if got.status != 200 || cookieOf(got, "hub_console") != nil || !strings.Contains(got.body, "signed in as the admin") {
			t.Fatalf("the link's page in the admin's browser: %d\n%s", got.status, got.body)
		}
		if got := admin.get("/console/tenants"); got.status != 200 || !strings.Contains(got.body, ">admin<") {
			t.Fatalf("the admin's session after the GET: %d", got.status)
		}
		// A cross-site POST, or one without the page's token, is refused
		// and spends nothing.
		csrf := admin.csrf(link)
		for name, tc := range map[string]struct {
			form    url.Values
			headers []string
		}{
			"another site":    {url.Values{"csrf": {csrf}}, []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}},
			"no token":        {url.Values{}, nil},
			"session's token": {url.Values{"csrf": {admin.csrf("/console/")}}, nil},
		} {
			if got := admin.post(link, tc.form, tc.headers...); got.status != http.StatusForbidden || cookieOf(got, "hub_console") != nil {
				t.Errorf("%s: %d, want 403", name, got.status)
			}
		}
		if got := admin.get("/console/tenants"); got.status != 200 {
			t.Fatalf("the admin's session after refused posts: %d", got.status)
		}
		old, _ := admin.session(h)
		// Asked and answered on the page: the admin's session ends, the
		// tenant's starts.
		if got := admin.post(link, url.Values{"csrf": {admin.csrf(link)}}); got.status != 303 {
			t.Fatalf("continue: %d\n%s", got.status, got.body)
		}
		if got := admin.get("/console/"); !strings.Contains(got.body, "tenant acme") {
			t.Fatalf("after continuing: %d\n%s", got.status, got.body)
		}
		if _, err := h.store.TouchConsoleSession(context.Background(), old.TokenHash, time.Hour); hubpkg.ErrorCode(err) != hubpkg.ENOTFOUND {
			t.Errorf("the replaced admin session lives on: %v", err)
		}
	})
}

// docs/security.md: the Origin check compares scheme, host and port.
func TestOrigin_SchemeHostAndPortCompared(t *testing.T) {
	h := newHub(t, testkit.Drivers[1], options{})
	u, _ := url.Parse(h.url)
	port := u.Port()
	for _, c := range []struct {
		origin string
		host   string
		proto  string
		ok     bool
	}{
		{"http://127.0.0.1:" + port, "", "", true},
		{"HTTP://127.0.0.1:" + port, "", "", true},
		{"https://127.0.0.1:" + port, "", "", false}, // the black-box finding
		{"http://127.0.0.1:1" + port, "", "", false},
		{"http://127.0.0.1", "", "", false},
		{"http://localhost:" + port, "", "", false},
		{"null", "", "", false},
		{"http://hub.example", "hub.example", "", true}, // default ports
		{"http://hub.example:80", "hub.example", "", true},
		{"http://hub.example", "hub.example:80", "", true},
		{"http://hub.example:8080", "hub.example", "", false},
		{"https://hub.example", "hub.example", "", false},
		{"https://hub.example", "hub.example", "https", true}, // behind a TLS proxy
		{"https://hub.example:443", "hub.example", "https", true},
		{"https://hub.example:8443", "hub.example", "https", false},
		{"http://hub.example", "hub.example", "https", false},
		{"https://hub.example:8443", "hub.example:8443", "https", true},
		{"https://[::1]:8443", "[::1]:8443", "https", true},
		{"https://[::1]", "[::1]:443", "https", true},
	} {
		b := h.browser()
		csrf := b.csrf("/console/signin")
		req, _ := http.NewRequest("POST", h.url+"/console/signin", strings.NewReader(url.Values{"csrf": {csrf}, "token": {adminToken}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", c.origin)
		if c.host != "" {
			req.Host = c.host
		}
		if c.proto != "" {
			req.Header.Set("X-Forwarded-Proto", c.proto)
		}
		// The jar holds the pre-session cookie for 127.0.0.1: send it
		// whatever Host says.
		for _, ck := range b.c.Jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: "/console/"}) {
			req.AddCookie(ck)
		}
		got, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		got.Body.Close()
		if ok := got.StatusCode == 303; ok != c.ok {
			t.Errorf("Origin %s, Host %q, X-Forwarded-Proto %q: %d, want accepted=%v", c.origin, c.host, c.proto, got.StatusCode, c.ok)
		}
	}
}

// The tenant page lists the tenant's live links and revokes them
// (docs/console.md's portal links, docs/security.md's revocation).
func TestTenantPage_ListsAndRevokesPortalLinks(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		h.tenant("acme")
		_, body := h.apiCall("POST", "/v1/tenants/acme/portal-links", "", "")
		link, id := field(body, "url"), field(body, "id")
		portal := h.browser()
		portal.openPortal(link)

		admin := h.signIn(adminToken)
		page := admin.get("/console/tenants/acme")
		if page.status != 200 || !strings.Contains(page.body, id) || strings.Contains(page.body, strings.TrimPrefix(link, "/console/portal/")) {
			t.Fatalf("tenant page: %d\n%s", page.status, page.body)
		}
		got := admin.submit("/console/tenants/acme", "/console/tenants/acme/revoke-link", url.Values{"link_id": {id}})
		if got.status != 303 || got.header.Get("Location") != "/console/tenants/acme?done=link-revoked" {
			t.Fatalf("revoke from the console: %d %s\n%s", got.status, got.header.Get("Location"), got.body)
		}
		if got := admin.get("/console/tenants/acme?done=link-revoked"); strings.Contains(got.body, id) || !strings.Contains(got.body, "Portal link revoked") {
			t.Errorf("after revoking:\n%s", got.body)
		}
		if got := portal.get("/console/"); got.status != 303 {
			t.Errorf("the revoked link's session: %d", got.status)
		}
		if got := admin.submit("/console/tenants/acme", "/console/tenants/acme/revoke-link", url.Values{"link_id": {id}}); got.status != 404 {
			t.Errorf("revoking twice: %d", got.status)
		}
	})
}
