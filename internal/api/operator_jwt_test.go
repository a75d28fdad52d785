package api_test

import (
	"context"
	"crypto/rsa"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// With the access manager on and no admin token (Lerian's chart sets
// none), an operator's JWT (no tenantId) the access manager allows reaches
// every route the admin token could: none answers 401 or 403, and each
// asks the access manager with its own resource and action.
func TestAccessManager_OperatorJWTReachesEveryAdminRouteWithoutAnAdminToken(t *testing.T) {
	clock := testkit.NewClock()
	s := testkit.OpenSQLite(t, store.Options{Now: clock.Now})
	if _, err := s.CreateTenant(context.Background(), store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	am := newAccessManager(t)
	good, _ := testKeys(t)
	d := config.Defaults(config.Serve)
	auth := d.Auth
	auth.Enabled, auth.Address, auth.Timeout, auth.Keys = true, am.srv.URL, 2*time.Second, []*rsa.PublicKey{&good.PublicKey}
	srv, err := api.New(api.Deps{
		Store: s, Metrics: metrics.New(), Logger: slog.New(slog.DiscardHandler), AdminToken: "",
		Now: clock.Now, Pull: d.Pull, AuthFailureLimit: 1 << 30, HealthWindow: d.Housekeeping.HealthWindow, Auth: auth,
	})
	if err != nil {
		t.Fatal(err)
	}
	token := mint(t, good, "RS256", map[string]any{"type": "normal-user", "owner": "lerian", "sub": "ops", "exp": clock.Now().Add(time.Hour).Unix()})
	h := srv.Handler()
	routes := api.Routes(srv)
	n := 0
	for pattern, open := range routes {
		if open {
			continue
		}
		n++
		method, path, _ := strings.Cut(pattern, " ")
		path = strings.NewReplacer("{id}", "acme", "{key_id}", "key_x", "{link_id}", "lnk_x").Replace(path)
		body := ""
		if method == "POST" || method == "PATCH" {
			body = "{}"
		}
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.RemoteAddr = "192.0.2.10:1234"
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("X-Tenant-Id", "acme")
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code == 401 || w.Code == 403 || strings.Contains(w.Body.String(), "auth_unavailable") {
			t.Errorf("%s: %d %s", pattern, w.Code, w.Body.String())
		}
		want, _ := api.RouteAccess(pattern)
		calls := am.calls()
		if len(calls) == 0 {
			t.Errorf("%s: the access manager was not asked", pattern)
			continue
		}
		if c := calls[0].Body; c["resource"] != want.Resource || c["action"] != want.Action || c["sub"] != "lerian/ops" {
			t.Errorf("%s: asked %v, want %+v for lerian/ops", pattern, c, want)
		}
	}
	if n < 30 {
		t.Fatalf("only %d admin routes: is the route list whole?", n)
	}
	// Without a token, and with a made-up one, nothing opens: an empty
	// admin token is no credential.
	for _, bearer := range []string{"", "Bearer ", "Bearer x"} {
		r := httptest.NewRequest("GET", "/v1/tenants", nil)
		if bearer != "" {
			r.Header.Set("Authorization", bearer)
		}
		am.allow(false)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 401 && w.Code != 403 {
			t.Errorf("GET /v1/tenants with %q: %d", bearer, w.Code)
		}
	}
}
