package console_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// switchedAM is a real HTTP access manager whose answer the test switches:
// "allow", "deny" (authorized false), "5xx"; closing it leaves its address
// with no listener.
type switchedAM struct {
	srv   *httptest.Server
	mu    sync.Mutex
	mode  string
	asked []map[string]any
}

func newSwitchedAM(t *testing.T) *switchedAM {
	am := &switchedAM{mode: "allow"}
	am.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &body)
		am.mu.Lock()
		am.asked = append(am.asked, body)
		mode := am.mode
		am.mu.Unlock()
		switch mode {
		case "5xx":
			w.WriteHeader(http.StatusBadGateway)
		default:
			json.NewEncoder(w).Encode(map[string]bool{"authorized": mode == "allow"})
		}
	}))
	t.Cleanup(am.srv.Close)
	return am
}

func (am *switchedAM) set(mode string) {
	am.mu.Lock()
	am.mode = mode
	am.mu.Unlock()
}

// calls returns and forgets what the access manager was asked.
func (am *switchedAM) calls() []map[string]any {
	am.mu.Lock()
	defer am.mu.Unlock()
	c := am.asked
	am.asked = nil
	return c
}

// A console session opened with a JWT is authorized on every click: once
// the access manager stops allowing (or cannot be asked), the next page
// read and the next form post are refused in the console's layout, and
// nothing is created; the admin token's session is unaffected
// (docs/lerian-platform.md#lerians-access-manager).
func TestConsoleJWTSession_RefusedOnceTheAccessManagerStopsAllowing(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		am := newSwitchedAM(t)
		h := newHub(t, d, options{auth: config.Auth{Enabled: true, Address: am.srv.URL, Timeout: testkit.Scaled(2 * time.Second),
			Keys: []*rsa.PublicKey{&key.PublicKey}}})
		h.tenant("acme")
		exp := h.clock.Now().Add(2 * time.Hour).Unix()
		operatorJWT := mintJWT(t, key, map[string]any{"type": "normal-user", "owner": "lerian", "sub": "alice", "exp": exp})
		tenantJWT := mintJWT(t, key, map[string]any{"type": "normal-user", "owner": "lerian", "sub": "tom", "tenantId": "acme", "exp": exp})

		op := h.signIn(operatorJWT)
		tn := h.signIn(tenantJWT)
		admin := h.signIn(adminToken)
		// Allowed: the pages answer, each asked with the session's token.
		if got := op.get("/console/tenants/acme"); got.status != 200 {
			t.Fatalf("allowed operator page: %d\n%s", got.status, got.body)
		}
		if got := tn.get("/console/subscriptions"); got.status != 200 {
			t.Fatalf("allowed tenant page: %d\n%s", got.status, got.body)
		}
		asked := am.calls()
		resources := map[string]bool{}
		for _, q := range asked {
			resources[q["resource"].(string)+"/"+q["action"].(string)] = true
			if q["sub"] != "lerian/alice" && q["sub"] != "lerian/tom" {
				t.Errorf("asked for %v", q["sub"])
			}
		}
		for _, want := range []string{"tenants/get", "keys/get", "portal-links/get", "subscriptions/get"} {
			if !resources[want] {
				t.Errorf("the pages did not ask %s (asked %v)", want, resources)
			}
		}
		// The forms' CSRF token, taken while allowed: it is the session's.
		csrf := csrfRE.FindStringSubmatch(op.get("/console/tenants/acme").body)[1]
		am.calls()

		keysOf := func() int {
			_, body := h.apiCall("GET", "/v1/tenants/acme/keys", "", "")
			return strings.Count(body, `"id":`)
		}
		linksOf := func() int {
			_, body := h.apiCall("GET", "/v1/tenants/acme/portal-links", "", "")
			return strings.Count(body, `"id":`)
		}
		keys, links := keysOf(), linksOf()

		for _, phase := range []struct {
			mode   string
			status int
			says   string
		}{
			{"deny", 403, "does not allow you"},
			{"5xx", 503, "could not be asked"},
			{"closed", 503, "could not be asked"},
		} {
			if phase.mode == "closed" {
				am.srv.Close()
			} else {
				am.set(phase.mode)
			}
			for name, got := range map[string]page{
				"page read":     op.get("/console/tenants"),
				"tenant page":   tn.get("/console/subscriptions"),
				"overview":      op.get("/console/"),
				"tenant create": op.post("/console/tenants", url.Values{"csrf": {csrf}, "id": {"newco-" + phase.mode}}),
				"key create":    op.post("/console/tenants/acme/keys", url.Values{"csrf": {csrf}}),
				"portal link":   op.post("/console/tenants/acme/portal-link", url.Values{"csrf": {csrf}, "ttl": {"1h"}}),
			} {
				if got.status != phase.status || !strings.Contains(got.body, phase.says) || !strings.Contains(got.body, "Sign out") {
					t.Errorf("%s, access manager %s: %d, want %d saying %q in the console's layout\n%s",
						name, phase.mode, got.status, phase.status, phase.says, got.body)
				}
				if strings.Contains(got.body, "shk_") || strings.Contains(got.body, "/console/portal/") {
					t.Errorf("%s, access manager %s: a secret was shown", name, phase.mode)
				}
			}
			if st, _ := h.apiCall("GET", "/v1/tenants/newco-"+phase.mode, "", ""); st != 404 {
				t.Errorf("access manager %s: the refused tenant create made a tenant (%d)", phase.mode, st)
			}
			if k, l := keysOf(), linksOf(); k != keys || l != links {
				t.Errorf("access manager %s: keys %d -> %d, links %d -> %d", phase.mode, keys, k, links, l)
			}
			// The admin token's session is not the access manager's.
			am.calls()
			if got := admin.get("/console/tenants/acme"); got.status != 200 {
				t.Errorf("admin page, access manager %s: %d", phase.mode, got.status)
			}
			if got := admin.submit("/console/tenants/acme", "/console/tenants/acme/keys", nil); got.status != 201 || !strings.Contains(got.body, "shk_") {
				t.Errorf("admin key create, access manager %s: %d", phase.mode, got.status)
			}
			keys++
			if c := am.calls(); len(c) != 0 {
				t.Errorf("the admin's session asked the access manager: %v", c)
			}
		}
	})
}

// The console's questions are the API's: the same (resource, action) for
// the same token and client address share the access manager's decision
// cache, whichever asked first.
func TestConsoleJWTSession_SharesTheAPIsDecisionCache(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	am := newSwitchedAM(t)
	h := newHub(t, testkit.Drivers[1], options{auth: config.Auth{Enabled: true, Address: am.srv.URL, Timeout: testkit.Scaled(2 * time.Second),
		CacheTTL: 30 * time.Second, Keys: []*rsa.PublicKey{&key.PublicKey}}})
	h.tenant("acme")
	jwt := mintJWT(t, key, map[string]any{"type": "application", "sub": "ops", "exp": h.clock.Now().Add(time.Hour).Unix()})
	b := h.signIn(jwt) // asks tenants/get: cached
	am.calls()
	am.set("deny")
	// Within the TTL the allow stands for the console and the API alike ...
	if got := b.get("/console/tenants"); got.status != 200 {
		t.Fatalf("cached allow: %d", got.status)
	}
	req, _ := http.NewRequest("GET", h.url+"/v1/tenants", nil)
	req.Header.Set("Authorization", "Bearer "+jwt)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("API, cached allow: %d", res.StatusCode)
	}
	if c := am.calls(); len(c) != 0 {
		t.Fatalf("asked again within the TTL: %v", c)
	}
	// ... and past it the denial is both's.
	h.clock.Advance(31 * time.Second)
	if got := b.get("/console/tenants"); got.status != 403 {
		t.Fatalf("past the TTL: %d", got.status)
	}
	if c := am.calls(); len(c) != 1 {
		t.Fatalf("past the TTL: %d questions, want 1 (the page's, kept for its calls)", len(c))
	}
}

// Console sign-in is throttled per client address resolved through
// TRUSTED_PROXIES, as the API is: one client behind the proxy failing too
// often is refused 429, the admin behind the same proxy signs in.
func TestSignIn_ThrottledByTheResolvedClientAddress(t *testing.T) {
	_, proxies, _ := net.ParseCIDR("127.0.0.1/32") // the test's browsers come from it
	const limit = 4
	h := newHub(t, testkit.Drivers[1], options{authLimit: limit, auth: config.Auth{TrustedProxies: []*net.IPNet{proxies}}})
	signIn := func(b *browser, xff, token string) page {
		t.Helper()
		return b.post("/console/signin", url.Values{"csrf": {b.csrf("/console/signin")}, "token": {token}}, "X-Forwarded-For", xff)
	}
	attacker := h.browser()
	for i := range limit + 1 {
		if got := signIn(attacker, "198.51.100.66", "shk_nope.wrong"); got.status != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d", i+1, got.status)
		}
	}
	if got := signIn(attacker, "198.51.100.66", adminToken); got.status != http.StatusTooManyRequests {
		t.Fatalf("the throttled client: %d, want 429", got.status)
	}
	if got := signIn(h.browser(), "198.51.100.67", adminToken); got.status != http.StatusSeeOther {
		t.Fatalf("the admin behind the same proxy: %d, want 303\n%s", got.status, got.body)
	}
}
