package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// On a single-tenant hub the operator acts on its one tenant without
// choosing it: the picker has it selected on the overview, tenant pages
// show its data, and the API needs no X-Tenant-Id. Another tenant can still
// be chosen.
func TestSingleTenant_OperatorActsOnTheServedTenantWithoutChoosing(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{servedTenant: "acme"})
		h.tenant("acme")
		h.tenant("globex")
		b := h.signIn(adminToken)

		over := b.get("/console/")
		if over.status != http.StatusOK || !strings.Contains(over.body, `<option value="acme" selected>`) || strings.Contains(over.body, "— choose —") {
			t.Fatalf("overview: %d\n%s", over.status, over.body)
		}
		subs := b.get("/console/subscriptions")
		if subs.status != http.StatusOK || strings.Contains(subs.body, "Choose the tenant to act on") {
			t.Fatalf("subscriptions: %d\n%s", subs.status, subs.body)
		}
		if status, body := h.apiCall("GET", "/v1/subscriptions", "", ""); status != http.StatusOK {
			t.Fatalf("GET /v1/subscriptions without X-Tenant-Id: %d %s", status, body)
		}

		b.submit("/console/", "/console/tenant", map[string][]string{"tenant": {"globex"}, "back": {"/console/"}})
		if p := b.get("/console/"); !strings.Contains(p.body, `<option value="globex" selected>`) {
			t.Fatalf("after choosing globex:\n%s", p.body)
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
