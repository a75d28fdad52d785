package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// On a single-tenant hub the operator acts on its one tenant without
// choosing it, and the console offers no other: no tenant picker, no
// tenant created from the tenants page (which lists the served tenant
// alone), another tenant's page refused, and a tenant cookie naming
// another tenant (from before single-tenant mode) changes nothing
// (docs/security.md#one-tenant-everywhere).
func TestSingleTenant_OperatorActsOnTheServedTenantAndIsOfferedNoOther(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{servedTenant: "acme"})
		h.tenant("acme")
		// globex is in the roster from before the hub served one tenant.
		if _, err := h.store.CreateTenant(context.Background(), store.CreateTenantParams{ID: "globex", Name: "Globex"}); err != nil {
			t.Fatal(err)
		}
		b := h.signIn(adminToken)

		over := b.get("/console/")
		if over.status != http.StatusOK || strings.Contains(over.body, `id="tenant-picker"`) || strings.Contains(over.body, "globex") {
			t.Fatalf("overview: %d\n%s", over.status, over.body)
		}
		subs := b.get("/console/subscriptions")
		if subs.status != http.StatusOK || strings.Contains(subs.body, "Choose the tenant to act on") {
			t.Fatalf("subscriptions: %d\n%s", subs.status, subs.body)
		}
		if status, body := h.apiCall("GET", "/v1/subscriptions", "", ""); status != http.StatusOK {
			t.Fatalf("GET /v1/subscriptions without X-Tenant-Id: %d %s", status, body)
		}
		tenants := b.get("/console/tenants")
		if tenants.status != http.StatusOK || strings.Contains(tenants.body, `action="/console/tenants"`) ||
			!strings.Contains(tenants.body, "/console/tenants/acme") || strings.Contains(tenants.body, "globex") {
			t.Fatalf("tenants page: %d\n%s", tenants.status, tenants.body)
		}
		if p := b.get("/console/tenants/globex"); p.status != http.StatusForbidden {
			t.Fatalf("globex's page: %d\n%s", p.status, p.body)
		}
		if p := b.submit("/console/tenants", "/console/tenants", map[string][]string{"id": {"evil"}}); p.status != http.StatusForbidden {
			t.Fatalf("creating a tenant: %d\n%s", p.status, p.body)
		}
		if _, err := h.store.GetTenant(context.Background(), "evil"); err == nil {
			t.Fatal("the console created another tenant")
		}
		if p := b.submit("/console/", "/console/tenant", map[string][]string{"tenant": {"globex"}, "back": {"/console/"}}); p.status != http.StatusForbidden {
			t.Fatalf("choosing globex: %d\n%s", p.status, p.body)
		}
		base, _ := url.Parse(h.url + "/console/")
		b.c.Jar.SetCookies(base, []*http.Cookie{{Name: "hub_console_tenant", Value: "globex", Path: "/console"}})
		if p := b.get("/console/subscriptions"); p.status != http.StatusOK || strings.Contains(p.body, "globex") {
			t.Fatalf("subscriptions with a cookie naming globex: %d\n%s", p.status, p.body)
		}
	})
}

// A multi-tenant hub with one tenant acts on it; with two it asks the
// operator to choose, and then keeps the choice.
func TestMultiTenant_OperatorChoosesATenant(t *testing.T) {
	h := newHub(t, testkit.Drivers[1], options{})
	h.tenant("acme")
	b := h.signIn(adminToken)
	if p := b.get("/console/"); !strings.Contains(p.body, `<option value="acme" selected>`) || strings.Contains(p.body, "— choose —") {
		t.Fatalf("overview with one tenant:\n%s", p.body)
	}
	if p := b.get("/console/subscriptions"); p.status != http.StatusOK || strings.Contains(p.body, "Choose the tenant to act on") {
		t.Fatalf("subscriptions with one tenant: %d\n%s", p.status, p.body)
	}
	h.tenant("globex")
	if p := b.get("/console/subscriptions"); !strings.Contains(p.body, "Choose the tenant to act on") {
		t.Fatalf("subscriptions without a tenant:\n%s", p.body)
	}
	if status, _ := h.apiCall("GET", "/v1/subscriptions", "", ""); status != http.StatusBadRequest {
		t.Fatalf("GET /v1/subscriptions without X-Tenant-Id: %d, want 400", status)
	}
	b.submit("/console/", "/console/tenant", map[string][]string{"tenant": {"globex"}, "back": {"/console/"}})
	if p := b.get("/console/deliveries"); strings.Contains(p.body, "Choose the tenant to act on") || !strings.Contains(p.body, `<option value="globex" selected>`) {
		t.Fatalf("deliveries after choosing globex:\n%s", p.body)
	}

	// The next visit starts on the tenant used last: signed out and in
	// again in the same browser, globex is still chosen; a browser that
	// never chose is asked.
	if p := b.submit("/console/", "/console/signout", nil); p.status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", p.status)
	}
	if p := b.submit("/console/signin", "/console/signin", url.Values{"token": {adminToken}}); p.status != http.StatusSeeOther {
		t.Fatalf("sign-in again: %d\n%s", p.status, p.body)
	}
	if p := b.get("/console/deliveries"); strings.Contains(p.body, "Choose the tenant to act on") || !strings.Contains(p.body, `<option value="globex" selected>`) {
		t.Fatalf("deliveries on the next visit:\n%s", p.body)
	}
	if p := h.signIn(adminToken).get("/console/deliveries"); !strings.Contains(p.body, "Choose the tenant to act on") {
		t.Fatalf("a browser that never chose is not asked:\n%s", p.body)
	}
}
