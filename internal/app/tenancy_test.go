package app_test

import (
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
