package api_test

import (
	"fmt"
	"net"
	"net/http/httptest"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// fromVia calls the API from the socket peer with X-Forwarded-For xff ("":
// none) and token.
func (h *hubAPI) fromVia(peer, xff, token string) int {
	h.t.Helper()
	req := httptest.NewRequest("GET", "/v1/tenants", nil)
	req.RemoteAddr = peer + ":40000"
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, req)
	return rec.Code
}

// Failed authentications are throttled per client address resolved
// through TRUSTED_PROXIES (the address the access manager is told), not
// per socket peer: one client behind a trusted proxy is throttled alone,
// the others and the admin behind the same proxy are not; an untrusted
// peer's X-Forwarded-For is ignored, so rotating it dodges nothing
// (docs/security.md#what-a-hostile-tenant-cannot-do).
func TestThrottle_KeyedByTheResolvedClientAddress(t *testing.T) {
	_, proxies, _ := net.ParseCIDR("127.0.0.9/32")
	limit := config.Defaults(config.Serve).AuthFailureLimit
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{authLimit: limit, auth: config.Auth{TrustedProxies: []*net.IPNet{proxies}}})
	const proxy = "127.0.0.9"

	// One client behind the proxy: over the limit, it is refused 429 ...
	for i := range limit + 2 {
		want := map[bool]int{true: 401, false: 429}[i <= limit]
		if got := h.fromVia(proxy, "198.51.100.1", "shk_nope.wrong"); got != want {
			t.Fatalf("wrong bearer %d from the throttled client: %d, want %d", i+1, got, want)
		}
	}
	if got := h.fromVia(proxy, "198.51.100.1", adminToken); got != 429 {
		t.Fatalf("the throttled client with the admin token: %d, want 429", got)
	}
	// ... and the proxy's other clients are not: a wrong bearer is 401,
	// the admin token is let in, also with a hop the proxy itself added.
	if got := h.fromVia(proxy, "198.51.100.2", "shk_nope.wrong"); got != 401 {
		t.Fatalf("another client's wrong bearer: %d, want 401", got)
	}
	for _, xff := range []string{"198.51.100.3", "198.51.100.1, 198.51.100.3", "198.51.100.4, 127.0.0.9"} {
		if got := h.fromVia(proxy, xff, adminToken); got != 200 {
			t.Fatalf("the admin behind the proxy (X-Forwarded-For %q): %d, want 200", xff, got)
		}
	}

	// Many clients behind the proxy, each failing once: none is throttled.
	for i := range 3 * limit {
		if got := h.fromVia(proxy, fmt.Sprintf("192.0.2.%d", i+1), "shk_nope.wrong"); got != 401 {
			t.Fatalf("client %d behind the proxy: %d, want 401", i+1, got)
		}
	}
	if got := h.fromVia(proxy, "203.0.113.50", adminToken); got != 200 {
		t.Fatalf("the admin behind the proxy after many clients' failures: %d", got)
	}

	// An untrusted peer's X-Forwarded-For is the peer's to write: ignored.
	const peer = "203.0.113.7"
	for i := range limit + 1 {
		h.fromVia(peer, fmt.Sprintf("198.18.0.%d", i+1), "shk_nope.wrong")
	}
	if got := h.fromVia(peer, "198.18.1.1", adminToken); got != 429 {
		t.Fatalf("an untrusted peer rotating X-Forwarded-For: %d, want 429", got)
	}
	if got := h.fromVia(proxy, peer, adminToken); got != 429 {
		t.Fatalf("that peer through the trusted proxy: %d, want 429 (the same client address)", got)
	}
}
