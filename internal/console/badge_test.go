package console_test

import (
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// TestBadge_ATenantSessionShowsItsTenantsName (docs/console.md, names before
// ids): a tenant's session, opened with its key or a portal link, names its
// tenant by name in the badge on every page (the id on hover), read from the
// API as a tenant may; a rename shows on the next page; a name is text, never
// markup.
func TestBadge_ATenantSessionShowsItsTenantsName(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		key := h.tenant("acme")
		h.tenant("globex")
		if st, b := h.apiCall("PATCH", "/v1/tenants/acme", `{"name":"Acme Corp"}`, ""); st != 200 {
			t.Fatalf("rename: %d %s", st, b)
		}
		const badge = `<span class="badge tenant" title="Acme Corp (tenant id acme)">tenant Acme Corp</span>`
		st, body := h.apiCall("POST", "/v1/tenants/acme/portal-links", `{"ttl":"1h"}`, "")
		if st != 201 {
			t.Fatalf("portal link: %d %s", st, body)
		}
		portal := h.browser()
		if got := portal.openPortal(field(body, "url")); got.status != 303 {
			t.Fatalf("open the portal link: %d\n%s", got.status, got.body)
		}
		for name, b := range map[string]*browser{"key": h.signIn(key), "portal link": portal} {
			for _, p := range []string{"/console/", "/console/deliveries", "/console/subscriptions/sub_nope"} {
				got := b.get(p)
				if !strings.Contains(got.body, badge) {
					t.Errorf("%s session, %s (%d): no badge %s in\n%s", name, p, got.status, badge, got.body)
				}
				if strings.Contains(got.body, "globex") {
					t.Errorf("%s session, %s: another tenant is named", name, p)
				}
			}
		}
		if st, b := h.apiCall("PATCH", "/v1/tenants/acme", `{"name":"Acme <b>& Co"}`, ""); st != 200 {
			t.Fatalf("rename: %d %s", st, b)
		}
		if got := portal.get("/console/"); !strings.Contains(got.body, `>tenant Acme &lt;b&gt;&amp; Co</span>`) {
			t.Errorf("after a rename the badge is not the new name, as text:\n%s", got.body)
		}
		if got := h.signIn(adminToken).get("/console/"); !strings.Contains(got.body, `<span class="badge">admin</span>`) {
			t.Errorf("the operator's badge:\n%s", got.body)
		}
	})
}
