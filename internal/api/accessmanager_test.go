package api_test

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// accessManager is a real HTTP access manager of the test's own: it
// records each POST /v1/authorize and answers as told.
type accessManager struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	answer func(w http.ResponseWriter, r *http.Request)
	asked  []authorizeCall
}

type authorizeCall struct {
	Authorization string
	Body          map[string]any
}

func newAccessManager(t *testing.T) *accessManager {
	am := &accessManager{t: t}
	am.allow(true)
	am.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/v1/authorize" {
			t.Errorf("access manager asked %s %s", r.Method, r.URL.Path)
		}
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("authorize body %q: %v", b, err)
		}
		am.mu.Lock()
		am.asked = append(am.asked, authorizeCall{r.Header.Get("Authorization"), body})
		answer := am.answer
		am.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(am.srv.Close)
	return am
}

func (am *accessManager) set(fn func(w http.ResponseWriter, r *http.Request)) {
	am.mu.Lock()
	defer am.mu.Unlock()
	am.answer = fn
}

func (am *accessManager) allow(ok bool) {
	am.set(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"authorized": ok})
	})
}

func (am *accessManager) status(code int) {
	am.set(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) })
}

// calls returns and forgets what the access manager was asked.
func (am *accessManager) calls() []authorizeCall {
	am.mu.Lock()
	defer am.mu.Unlock()
	c := am.asked
	am.asked = nil
	return c
}

// mint signs claims with key (RS256).
func mint(t *testing.T, key *rsa.PrivateKey, alg string, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(map[string]string{"alg": alg, "typ": "JWT"}) + "." + enc(claims)
	digest := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

var (
	keyOnce         sync.Once
	goodKey, badKey *rsa.PrivateKey
)

func testKeys(t *testing.T) (*rsa.PrivateKey, *rsa.PrivateKey) {
	keyOnce.Do(func() {
		goodKey, _ = rsa.GenerateKey(rand.Reader, 2048)
		badKey, _ = rsa.GenerateKey(rand.Reader, 2048)
	})
	return goodKey, badKey
}

const issuer = "https://auth.example"

// amHub is an API server with the access manager enabled.
type amHub struct {
	t       *testing.T
	handler http.Handler
	clock   *testkit.Clock
	store   store.Store
	am      *accessManager
}

func newAMHub(t *testing.T, d testkit.Driver, auth config.Auth) *amHub {
	t.Helper()
	clock := testkit.NewClock()
	s := d.Open(t, store.Options{Now: clock.Now})
	am := newAccessManager(t)
	good, _ := testKeys(t)
	defaults := config.Defaults(config.Serve)
	auth.Enabled, auth.Address = true, am.srv.URL
	if auth.Timeout == 0 {
		auth.Timeout = 2 * time.Second
	}
	if auth.Keys == nil {
		auth.Keys = []*rsa.PublicKey{&good.PublicKey}
	}
	server, err := api.New(api.Deps{
		Store: s, Metrics: metrics.New(), Logger: slog.New(slog.DiscardHandler), AdminToken: adminToken,
		Now: clock.Now, Pull: defaults.Pull, AuthFailureLimit: 1 << 30, HealthWindow: defaults.Housekeeping.HealthWindow,
		Auth: auth,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &amHub{t: t, handler: server.Handler(), clock: clock, store: s, am: am}
}

// do sends a request from addr with the bearer token.
func (h *amHub) do(method, path, token, addr string, headers ...string) (int, string) {
	h.t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(""))
	r.RemoteAddr = addr
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Add(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	h.handler.ServeHTTP(w, r)
	return w.Code, w.Body.String()
}

func (h *amHub) decisions() map[string]string {
	_, body := h.do("GET", "/metrics", "", "192.0.2.1:1")
	out := map[string]string{}
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, `streaming_hub_auth_decisions_total{outcome="`); ok {
			label, value, _ := strings.Cut(rest, `"} `)
			out[label] = value
		}
	}
	return out
}

func (h *amHub) claims(extra map[string]any) map[string]any {
	c := map[string]any{"type": "application", "sub": "midaz", "azp": "midaz", "iss": issuer, "exp": h.clock.Now().Add(time.Hour).Unix()}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func TestAccessManager_Decisions(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newAMHub(t, d, config.Auth{Issuer: issuer})
		good, bad := testKeys(t)
		const peer = "203.0.113.9:4242"
		admin := func(method, path, body string, want int) {
			t.Helper()
			r := httptest.NewRequest(method, path, strings.NewReader(body))
			r.Header.Set("Authorization", "Bearer "+adminToken)
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.handler.ServeHTTP(w, r)
			if w.Code != want {
				t.Fatalf("%s %s = %d %s", method, path, w.Code, w.Body)
			}
		}
		admin("POST", "/v1/tenants", `{"id":"acme","name":"acme"}`, 201)
		admin("POST", "/v1/tenants", `{"id":"gone","name":"gone"}`, 201)
		admin("PATCH", "/v1/tenants/gone", `{"status":"inactive"}`, 200)
		if c := h.am.calls(); len(c) != 0 {
			t.Fatalf("the admin token went to the access manager: %v", c)
		}

		// An application token without tenantId: an operator, authorized.
		app := mint(t, good, "RS256", h.claims(nil))
		if status, body := h.do("GET", "/v1/tenants", app, peer); status != 200 {
			t.Fatalf("allowed operator = %d %s", status, body)
		}
		c := h.am.calls()
		if len(c) != 1 || c[0].Authorization != "Bearer "+app {
			t.Fatalf("calls = %+v", c)
		}
		want := map[string]any{"sub": "midaz", "resource": "tenants", "action": "get", "clientIp": "203.0.113.9"}
		if b, _ := json.Marshal(c[0].Body); string(b) != mustJSON(want) {
			t.Fatalf("body = %s, want %s", b, mustJSON(want))
		}
		// A normal user: <owner>/<sub>; resource and action by route.
		user := mint(t, good, "RS256", h.claims(map[string]any{"type": "normal-user", "owner": "lerian", "sub": "alice"}))
		if status, body := h.do("PATCH", "/v1/tenants/acme", user, peer); status != 400 && status != 200 {
			t.Fatalf("user PATCH = %d %s", status, body)
		}
		c = h.am.calls()
		if len(c) != 1 || c[0].Body["sub"] != "lerian/alice" || c[0].Body["resource"] != "tenants" || c[0].Body["action"] != "patch" {
			t.Fatalf("user call = %+v", c)
		}
		for path, resource := range map[string]string{
			"/v1/tenants/acme/keys": "keys", "/v1/tenants/acme/portal-links": "portal-links", "/v1/event-types": "event-types",
			"/v1/admin/manifests": "manifests", "/v1/admin/rejections": "rejections", "/v1/deliveries": "deliveries",
		} {
			h.do("GET", path, app, peer, "X-Tenant-Id", "acme")
			if c := h.am.calls(); len(c) != 1 || c[0].Body["resource"] != resource {
				t.Fatalf("GET %s: calls %+v, want resource %s", path, c, resource)
			}
		}
		h.do("DELETE", "/v1/subscriptions/sub_x", app, peer, "X-Tenant-Id", "acme")
		if c := h.am.calls(); len(c) != 1 || c[0].Body["resource"] != "subscriptions" || c[0].Body["action"] != "delete" {
			t.Fatalf("DELETE subscription: %+v", c)
		}

		// The access manager's answers.
		for _, tc := range []struct {
			name   string
			answer func(w http.ResponseWriter, r *http.Request)
			status int
			code   string
		}{
			{"authorized false", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"authorized":false}`)) }, 403, "forbidden"},
			{"401", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }, 401, "unauthorized"},
			{"403", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(403) }, 403, "forbidden"},
			{"404", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) }, 404, "not_found"},
			{"400", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(400) }, 503, "auth_unavailable"},
			{"408", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(408) }, 503, "auth_unavailable"},
			{"422", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(422) }, 503, "auth_unavailable"},
			{"429", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(429) }, 503, "auth_unavailable"},
			{"500", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }, 503, "auth_unavailable"},
			{"502 saying authorized", func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(502)
				w.Write([]byte(`{"authorized":true}`))
			}, 503, "auth_unavailable"},
			{"redirect", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/v1/allow-all", http.StatusTemporaryRedirect)
			}, 503, "auth_unavailable"},
			{"unparseable", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`authorized: yes`)) }, 503, "auth_unavailable"},
			{"no authorized field", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) }, 503, "auth_unavailable"},
			{"hangs up", func(w http.ResponseWriter, r *http.Request) {
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
			}, 503, "auth_unavailable"},
		} {
			h.am.set(tc.answer)
			status, body := h.do("GET", "/v1/tenants", app, peer)
			var e struct{ Error struct{ Code string } }
			json.Unmarshal([]byte(body), &e)
			if status != tc.status || e.Error.Code != tc.code {
				t.Errorf("%s: %d %s, want %d %s", tc.name, status, body, tc.status, tc.code)
			}
			if c := h.am.calls(); tc.name != "redirect" && len(c) != 1 || tc.name == "redirect" && len(c) != 1 {
				t.Errorf("%s: %d calls (a redirect is not followed)", tc.name, len(c))
			}
		}
		h.am.allow(true)

		// Tokens refused before anyone is asked: 401.
		for name, token := range map[string]string{
			"expired":       mint(t, good, "RS256", h.claims(map[string]any{"exp": h.clock.Now().Add(-time.Second).Unix()})),
			"no exp":        mint(t, good, "RS256", h.claims(map[string]any{"exp": nil})),
			"wrong key":     mint(t, bad, "RS256", h.claims(nil)),
			"wrong issuer":  mint(t, good, "RS256", h.claims(map[string]any{"iss": "https://elsewhere"})),
			"alg not RS256": mint(t, good, "RS384", h.claims(nil)),
			"other type":    mint(t, good, "RS256", h.claims(map[string]any{"type": "robot"})),
			"no owner":      mint(t, good, "RS256", h.claims(map[string]any{"type": "normal-user"})),
			"empty sub":     mint(t, good, "RS256", h.claims(map[string]any{"sub": ""})),
			"not a JWT":     "just-some-words",
			"tampered claims": func() string {
				p := strings.Split(app, ".")
				p[1] = base64.RawURLEncoding.EncodeToString([]byte(`{"type":"application","sub":"root","exp":9999999999}`))
				return strings.Join(p, ".")
			}(),
		} {
			if status, body := h.do("GET", "/v1/tenants", token, peer); status != 401 {
				t.Errorf("%s: %d %s, want 401", name, status, body)
			}
			if c := h.am.calls(); len(c) != 0 {
				t.Errorf("%s reached the access manager", name)
			}
		}

		// tenantId: that tenant only, active and in the roster.
		tenantTok := mint(t, good, "RS256", h.claims(map[string]any{"tenantId": "acme"}))
		if status, body := h.do("GET", "/v1/subscriptions", tenantTok, peer); status != 200 {
			t.Fatalf("tenant token = %d %s", status, body)
		}
		if c := h.am.calls(); len(c) != 1 || c[0].Body["resource"] != "subscriptions" {
			t.Fatalf("tenant call %+v", c)
		}
		if status, _ := h.do("GET", "/v1/tenants", tenantTok, peer); status != 403 {
			t.Fatalf("tenant token on an operator route = %d, want 403", status)
		}
		h.am.calls()
		// Its own tenant it may read (asked as tenants/get); another is
		// the unknown id's 404.
		if status, body := h.do("GET", "/v1/tenants/acme", tenantTok, peer); status != 200 || !strings.Contains(body, `"id":"acme"`) {
			t.Fatalf("tenant token reading its tenant = %d %s", status, body)
		}
		if c := h.am.calls(); len(c) != 1 || c[0].Body["resource"] != "tenants" || c[0].Body["action"] != "get" {
			t.Fatalf("tenant token reading its tenant: calls %+v", c)
		}
		other, _ := h.do("GET", "/v1/tenants/gone", tenantTok, peer)
		unknown, _ := h.do("GET", "/v1/tenants/nobody", tenantTok, peer)
		if other != 404 || unknown != 404 {
			t.Fatalf("tenant token reading another tenant = %d, an unknown one = %d, want 404", other, unknown)
		}
		h.am.calls()
		for _, id := range []string{"gone", "nobody"} {
			tok := mint(t, good, "RS256", h.claims(map[string]any{"tenantId": id}))
			if status, body := h.do("GET", "/v1/subscriptions", tok, peer); status != 403 {
				t.Fatalf("tenant %s = %d %s, want 403", id, status, body)
			}
			if c := h.am.calls(); len(c) != 0 {
				t.Fatalf("tenant %s reached the access manager", id)
			}
		}

		got := h.decisions()
		wantM := map[string]string{"allowed": "14", "denied": "4", "unavailable": "10", "cached": "0", "invalid_token": "10"}
		for k, v := range wantM {
			if got[k] != v {
				t.Errorf("decisions %s = %s, want %s (all: %v)", k, got[k], v, got)
			}
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestAccessManager_TimeoutAndNoAnswer(t *testing.T) {
	testkit.Long(t)
	d := testkit.Drivers[0]
	h := newAMHub(t, d, config.Auth{Timeout: 200 * time.Millisecond})
	good, _ := testKeys(t)
	tok := mint(t, good, "RS256", h.claims(nil))
	release := make(chan struct{})
	h.am.set(func(w http.ResponseWriter, r *http.Request) { <-release })
	start := time.Now()
	status, body := h.do("GET", "/v1/tenants", tok, "198.51.100.1:1")
	close(release)
	if status != 503 || !strings.Contains(body, "auth_unavailable") || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout: %d %s after %s", status, body, time.Since(start))
	}
	h.am.srv.Close()
	if status, body := h.do("GET", "/v1/tenants", tok, "198.51.100.1:1"); status != 503 || !strings.Contains(body, "auth_unavailable") {
		t.Fatalf("no answer: %d %s", status, body)
	}
	if got := h.decisions()["unavailable"]; got != "2" {
		t.Fatalf("unavailable = %s", got)
	}
}

func TestAccessManager_WithoutCertificate(t *testing.T) {
	testkit.Long(t)
	d := testkit.Drivers[0]
	h := newAMHub(t, d, config.Auth{Keys: []*rsa.PublicKey{}})
	_, bad := testKeys(t)
	// No certificate: the signature is the access manager's to check ...
	tok := mint(t, bad, "RS256", h.claims(nil))
	if status, body := h.do("GET", "/v1/tenants", tok, "198.51.100.1:1"); status != 200 {
		t.Fatalf("unverified token = %d %s", status, body)
	}
	// ... but an expired token is 401 in every case.
	old := mint(t, bad, "RS256", h.claims(map[string]any{"exp": h.clock.Now().Add(-time.Minute).Unix()}))
	if status, _ := h.do("GET", "/v1/tenants", old, "198.51.100.1:1"); status != 401 {
		t.Fatalf("expired without a certificate = %d", status)
	}
	if got := h.decisions(); got["invalid_token"] != "1" || got["allowed"] != "1" {
		t.Fatalf("decisions %v", got)
	}
}

func TestAccessManager_Cache(t *testing.T) {
	testkit.Long(t)
	d := testkit.Drivers[0]
	h := newAMHub(t, d, config.Auth{CacheTTL: 10 * time.Second})
	good, _ := testKeys(t)
	tok := mint(t, good, "RS256", h.claims(nil))
	for i := 0; i < 2; i++ {
		if status, body := h.do("GET", "/v1/tenants", tok, "198.51.100.1:1"); status != 200 {
			t.Fatalf("%d: %d %s", i, status, body)
		}
	}
	if c := h.am.calls(); len(c) != 1 {
		t.Fatalf("cached: %d calls, want 1", len(c))
	}
	// Another client address, action or resource is another question.
	h.do("GET", "/v1/tenants", tok, "198.51.100.2:1")
	h.do("POST", "/v1/tenants", tok, "198.51.100.1:1")
	if c := h.am.calls(); len(c) != 2 {
		t.Fatalf("other questions: %d calls, want 2", len(c))
	}
	// A denial is kept too; past the TTL the access manager is asked again.
	h.clock.Advance(11 * time.Second)
	h.am.allow(false)
	for i := 0; i < 2; i++ {
		if status, _ := h.do("GET", "/v1/tenants", tok, "198.51.100.1:1"); status != 403 {
			t.Fatalf("denied: %d", status)
		}
	}
	if c := h.am.calls(); len(c) != 1 {
		t.Fatalf("after the TTL: %d calls, want 1", len(c))
	}
	// An unavailable answer is never kept.
	h.clock.Advance(11 * time.Second)
	h.am.status(500)
	h.do("GET", "/v1/tenants", tok, "198.51.100.1:1")
	h.am.allow(true)
	if status, _ := h.do("GET", "/v1/tenants", tok, "198.51.100.1:1"); status != 200 {
		t.Fatalf("after unavailable: %d", status)
	}
	got := h.decisions()
	if got["cached"] != "2" || got["allowed"] != "4" || got["denied"] != "1" || got["unavailable"] != "1" {
		t.Fatalf("decisions %v", got)
	}
}

func TestAccessManager_ClientIP(t *testing.T) {
	testkit.Long(t)
	d := testkit.Drivers[0]
	_, n8, _ := net.ParseCIDR("10.0.0.0/8")
	_, n48, _ := net.ParseCIDR("fd00::/48")
	h := newAMHub(t, d, config.Auth{TrustedProxies: []*net.IPNet{n8, n48}})
	good, _ := testKeys(t)
	tok := mint(t, good, "RS256", h.claims(nil))
	for _, tc := range []struct {
		peer, xff string
		want      any // nil: omitted
	}{
		{"203.0.113.5:1", "", "203.0.113.5"},
		{"203.0.113.5:1", "198.51.100.7", "203.0.113.5"}, // an untrusted peer's X-Forwarded-For is not believed
		{"10.1.2.3:1", "198.51.100.7", "198.51.100.7"},
		{"10.1.2.3:1", "1.1.1.1, 198.51.100.7, 10.9.9.9", "198.51.100.7"},
		{"10.1.2.3:1", "10.0.0.5", nil},
		{"10.1.2.3:1", "", nil},
		{"10.1.2.3:1", "garbage", nil},
		{"[fd00::1]:1", "2001:db8::7", "2001:db8::7"},
		{"[2001:db8::9]:1", "", "2001:db8::9"},
	} {
		var headers []string
		if tc.xff != "" {
			headers = []string{"X-Forwarded-For", tc.xff}
		}
		h.do("GET", "/v1/tenants", tok, tc.peer, headers...)
		c := h.am.calls()
		if len(c) != 1 {
			t.Fatalf("%+v: %d calls", tc, len(c))
		}
		got, present := c[0].Body["clientIp"]
		if tc.want == nil && present || tc.want != nil && got != tc.want {
			t.Errorf("peer %s XFF %q: clientIp %v (present %v), want %v", tc.peer, tc.xff, got, present, tc.want)
		}
	}
}

func TestAccessManager_KeysStayTheHubs(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newAMHub(t, d, config.Auth{})
		r := httptest.NewRequest("POST", "/v1/tenants", bytes.NewReader([]byte(`{"id":"acme","name":"acme"}`)))
		r.Header.Set("Authorization", "Bearer "+adminToken)
		w := httptest.NewRecorder()
		h.handler.ServeHTTP(w, r)
		r = httptest.NewRequest("POST", "/v1/tenants/acme/keys", nil)
		r.Header.Set("Authorization", "Bearer "+adminToken)
		w = httptest.NewRecorder()
		h.handler.ServeHTTP(w, r)
		var k struct{ Key string }
		json.Unmarshal(w.Body.Bytes(), &k)
		if status, body := h.do("GET", "/v1/subscriptions", k.Key, "198.51.100.1:1"); status != 200 {
			t.Fatalf("key = %d %s", status, body)
		}
		if status, _ := h.do("GET", "/v1/subscriptions", "shk_nope_nope", "198.51.100.1:1"); status != 401 {
			t.Fatalf("bad key = %d", status)
		}
		if c := h.am.calls(); len(c) != 0 {
			t.Fatalf("the hub's credentials reached the access manager: %+v", c)
		}
	})
}
