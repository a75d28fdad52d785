package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// STREAMING_HUB_TENANT_ID makes the hub single-tenant: it creates the
// tenant at start, and the admin acts on it without naming it.
func TestSingleTenant_TheServedTenantIsCreatedAtStartAndActedOnByDefault(t *testing.T) {
	h, _ := startDev(t, map[string]string{"STREAMING_HUB_TENANT_ID": "acme"})
	if got := get(t, h, "/v1/tenants/acme"); !strings.Contains(got, `"id":"acme"`) || !strings.Contains(got, `"status":"active"`) {
		t.Fatalf("GET /v1/tenants/acme = %s", got)
	}
	req, _ := http.NewRequest("GET", "http://"+h.HTTPAddr()+"/v1/subscriptions", nil)
	req.Header.Set("Authorization", "Bearer "+h.Config.AdminToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/subscriptions without X-Tenant-Id: %d", res.StatusCode)
	}
}

// The report's reproduction: MULTI_TENANT_ENABLED=false with
// STREAMING_HUB_TENANT_ID=acme, then POST /v1/tenants {"id":"evil"}: 403
// tenant_not_served, and no tenant evil (docs/security.md#one-tenant-everywhere).
func TestSingleTenant_TheAPICreatesNoOtherTenant(t *testing.T) {
	h, _ := startDev(t, map[string]string{"MULTI_TENANT_ENABLED": "false", "STREAMING_HUB_TENANT_ID": "acme"})
	req, _ := http.NewRequest("POST", "http://"+h.HTTPAddr()+"/v1/tenants", strings.NewReader(`{"id":"evil"}`))
	req.Header.Set("Authorization", "Bearer "+h.Config.AdminToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(b), `"code":"tenant_not_served"`) {
		t.Fatalf("POST /v1/tenants evil: %d %s", res.StatusCode, b)
	}
	if got := get(t, h, "/v1/tenants"); strings.Contains(got, "evil") || !strings.Contains(got, `"id":"acme"`) {
		t.Fatalf("GET /v1/tenants = %s", got)
	}
}
