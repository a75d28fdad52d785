package api_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestAuthMatrix(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		anon := client{t: t, base: h.url}
		bad := client{t, h.url, "shk_key_0000000000000000.not-the-secret"}
		garbage := client{t, h.url, "garbage"}

		type call struct{ method, path, body string }
		adminOnly := []call{
			{"GET", "/v1/admin/rejections", ""},
			{"GET", "/v1/admin/dlq", ""},
			{"POST", "/v1/tenants", `{"id":"new"}`},
			{"GET", "/v1/tenants", ""},
			{"PATCH", "/v1/tenants/acme", `{"name":"x"}`},
			{"POST", "/v1/tenants/acme/keys", ""},
			{"DELETE", "/v1/tenants/acme/keys/key_0", ""},
		}
		// A tenant key reads its own tenant (TestTenants_AKeyReadsItsOwnTenantOnly).
		ownTenant := call{"GET", "/v1/tenants/acme", ""}
		tenantScoped := []call{
			{"POST", "/v1/subscriptions", `{}`},
			{"GET", "/v1/subscriptions", ""},
			{"GET", "/v1/subscriptions/sub_x", ""},
			{"PATCH", "/v1/subscriptions/sub_x", `{}`},
			{"DELETE", "/v1/subscriptions/sub_x", ""},
			{"POST", "/v1/subscriptions/sub_x/verify", ""},
			{"POST", "/v1/subscriptions/sub_x/rotate-secret", ""},
		}
		for _, c := range append(append(adminOnly, tenantScoped...), ownTenant) {
			for name, cl := range map[string]client{"no token": anon, "unknown key": bad, "garbage token": garbage} {
				status, _, body := cl.do(c.method, c.path, c.body)
				if status != 401 || !strings.Contains(string(body), `"code":"unauthorized"`) {
					t.Errorf("%s %s with %s = %d %s, want 401", c.method, c.path, name, status, body)
				}
			}
		}
		for _, c := range adminOnly {
			status, _, body := acme.do(c.method, c.path, c.body)
			if status != 403 || !strings.Contains(string(body), `"code":"forbidden"`) {
				t.Errorf("%s %s with a tenant key = %d %s, want 403", c.method, c.path, status, body)
			}
		}
		for _, c := range tenantScoped {
			status, _, body := h.admin.do(c.method, c.path, c.body)
			if status != 400 || !strings.Contains(string(body), "X-Tenant-Id") {
				t.Errorf("%s %s as admin without X-Tenant-Id = %d %s, want 400", c.method, c.path, status, body)
			}
		}
		// The admin names a tenant with X-Tenant-Id; an unknown one is 404.
		if status, _, body := h.admin.do("GET", "/v1/subscriptions", "", "X-Tenant-Id", "acme"); status != 200 {
			t.Errorf("admin listing acme's subscriptions = %d %s", status, body)
		}
		if status, _, _ := h.admin.do("GET", "/v1/subscriptions", "", "X-Tenant-Id", "nobody"); status != 404 {
			t.Errorf("admin naming an unknown tenant = %d", status)
		}
		// A right id with a wrong secret is no key.
		id := strings.SplitN(strings.TrimPrefix(acme.token, "shk_"), ".", 2)[0]
		forged := client{t, h.url, "shk_" + id + ".forged"}
		if status, _, _ := forged.do("GET", "/v1/subscriptions", ""); status != 401 {
			t.Errorf("forged secret = %d, want 401", status)
		}
	})
}

func TestKeys_DeletedKeyStopsWorkingAtOnce(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		h.admin.json("POST", "/v1/tenants", `{"id":"acme"}`, 201, nil)
		var k struct{ ID, Key string }
		h.admin.json("POST", "/v1/tenants/acme/keys", "{}", 201, &k)
		acme := client{t, h.url, k.Key}
		acme.json("GET", "/v1/subscriptions", "", 200, nil)
		if status, _, _ := h.admin.do("DELETE", "/v1/tenants/globex/keys/"+k.ID, ""); status != 404 {
			t.Fatalf("deleting acme's key under another tenant = %d, want 404", status)
		}
		if status, _, _ := h.admin.do("DELETE", "/v1/tenants/acme/keys/"+k.ID, ""); status != 204 {
			t.Fatalf("delete = %d", status)
		}
		if status, _, _ := acme.do("GET", "/v1/subscriptions", ""); status != 401 {
			t.Fatalf("deleted key = %d, want 401", status)
		}
		if strings.Contains(h.logs.String(), k.Key) {
			t.Fatal("the API key appears in the log")
		}
	})
}

func TestTenants_InactiveTenantsKeysAreRefused(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		var tenant struct{ ID, Name, Status, CreatedAt string }
		h.admin.json("PATCH", "/v1/tenants/acme", `{"status":"inactive"}`, 200, &tenant)
		if tenant.Status != "inactive" || tenant.Name != "acme" {
			t.Fatalf("patched tenant = %+v", tenant)
		}
		if status, _, _ := acme.do("GET", "/v1/subscriptions", ""); status != 403 {
			t.Fatalf("inactive tenant's key = %d, want 403", status)
		}
		if status, _, _ := h.admin.do("GET", "/v1/subscriptions", "", "X-Tenant-Id", "acme"); status != 200 {
			t.Fatalf("the admin can still manage an inactive tenant: %d", status)
		}
	})
}

func TestTenants_API(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		var created map[string]any
		h.admin.json("POST", "/v1/tenants", `{"id":"acme","name":"Acme"}`, 201, &created)
		if created["id"] != "acme" || created["name"] != "Acme" || created["status"] != "active" || created["created_at"] != "2026-11-30T12:00:00Z" {
			t.Fatalf("created = %v", created)
		}
		status, _, body := h.admin.do("POST", "/v1/tenants", `{"id":"acme","name":"again"}`)
		wantError(t, status, body, 409, "conflict")
		status, _, body = h.admin.do("POST", "/v1/tenants", `{"id":"bad id"}`)
		wantError(t, status, body, 400, "invalid")
		status, _, body = h.admin.do("PATCH", "/v1/tenants/acme", `{"status":"paused"}`)
		wantError(t, status, body, 400, "invalid")
		status, _, body = h.admin.do("GET", "/v1/tenants/nobody", "")
		wantError(t, status, body, 404, "not_found")
		status, _, body = h.admin.do("POST", "/v1/tenants/nobody/keys", "")
		wantError(t, status, body, 404, "not_found")
		for _, id := range []string{"b", "c"} {
			h.admin.json("POST", "/v1/tenants", `{"id":"`+id+`"}`, 201, nil)
		}
		var p struct {
			Data       []struct{ ID string }
			NextCursor *string `json:"next_cursor"`
		}
		h.admin.json("GET", "/v1/tenants?limit=2", "", 200, &p)
		if len(p.Data) != 2 || p.Data[0].ID != "acme" || p.NextCursor == nil {
			t.Fatalf("first page = %+v", p)
		}
		h.admin.json("GET", "/v1/tenants?limit=2&cursor="+*p.NextCursor, "", 200, &p)
		if len(p.Data) != 1 || p.Data[0].ID != "c" || p.NextCursor != nil {
			t.Fatalf("last page = %+v", p)
		}
	})
}

// TestTenants_AKeyReadsItsOwnTenantOnly: a tenant key reads its own tenant
// (its name, for the console's badge) as the admin sees it; asking for
// another tenant's id is answered exactly as an unknown id is, so a key
// learns nothing of other tenants, and it still changes nothing.
func TestTenants_AKeyReadsItsOwnTenantOnly(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		h.tenant("globex")
		h.admin.json("PATCH", "/v1/tenants/acme", `{"name":"Acme Corp"}`, 200, nil)
		status, _, own := acme.do("GET", "/v1/tenants/acme", "")
		_, _, asAdmin := h.admin.do("GET", "/v1/tenants/acme", "")
		if status != 200 || string(own) != string(asAdmin) || !strings.Contains(string(own), `"name":"Acme Corp"`) {
			t.Fatalf("acme reading acme = %d %s; the admin sees %s", status, own, asAdmin)
		}

		// globex exists, nobody does: acme's key cannot tell them apart.
		otherStatus, otherHeader, other := acme.do("GET", "/v1/tenants/globex", "")
		unknownStatus, unknownHeader, unknown := acme.do("GET", "/v1/tenants/nobody", "")
		wantError(t, otherStatus, other, 404, "not_found")
		if otherStatus != unknownStatus || string(other) != strings.ReplaceAll(string(unknown), "nobody", "globex") ||
			otherHeader.Get("Content-Type") != unknownHeader.Get("Content-Type") {
			t.Fatalf("another tenant: %d %s; an unknown id: %d %s", otherStatus, other, unknownStatus, unknown)
		}
		if strings.Contains(string(other), "Globex") || strings.Contains(string(other), "active") {
			t.Fatalf("another tenant's answer tells about it: %s", other)
		}
		// The admin's answer for an unknown id is the same too.
		_, _, adminUnknown := h.admin.do("GET", "/v1/tenants/nobody", "")
		if string(adminUnknown) != string(unknown) {
			t.Fatalf("unknown id: the admin gets %s, a key %s", adminUnknown, unknown)
		}
		long := strings.Repeat("g", 300)
		_, _, longAsKey := acme.do("GET", "/v1/tenants/"+long, "")
		_, _, longAsAdmin := h.admin.do("GET", "/v1/tenants/"+long, "")
		if string(longAsKey) != string(longAsAdmin) {
			t.Fatalf("a long unknown id: a key gets %s, the admin %s", longAsKey, longAsAdmin)
		}

		// Reading is all: the roster and changes stay the admin's.
		for _, c := range []struct{ method, path, body string }{
			{"PATCH", "/v1/tenants/acme", `{"name":"mine"}`},
			{"GET", "/v1/tenants", ""},
			{"GET", "/v1/tenants/acme/keys", ""},
		} {
			status, _, body := acme.do(c.method, c.path, c.body)
			wantError(t, status, body, 403, "forbidden")
		}
		// An inactive tenant's key is refused, as everywhere.
		h.admin.json("PATCH", "/v1/tenants/acme", `{"status":"inactive"}`, 200, nil)
		status, _, body := acme.do("GET", "/v1/tenants/acme", "")
		wantError(t, status, body, 403, "forbidden")
	})
}

// from calls the API as a client at addr with token.
func (h *hubAPI) from(addr, token, method, path string) int {
	h.t.Helper()
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = addr + ":40000"
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.handler.ServeHTTP(rec, req)
	return rec.Code
}

// TestAuth_TheRightSecretIsNeverThrottledForItsKeyID (docs/security.md): wrong
// secrets for one key id from many addresses throttle that key id for
// wrong secrets only; its holder, with the right secret, from a fresh
// address, gets in. Per-address throttling stays as it was.
func TestAuth_TheRightSecretIsNeverThrottledForItsKeyID(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{authLimit: 20})
		key := h.tenant("acme").token
		id, _, _ := strings.Cut(key, ".")
		wrong := id + ".not-the-secret"
		// More than 20 failures in the minute throttle the key id: the 22nd
		// wrong secret is the first refused 429.
		for i := range 25 {
			status := h.from(fmt.Sprintf("192.0.2.%d", i+1), wrong, "GET", "/v1/subscriptions")
			if want := map[bool]int{true: 401, false: 429}[i < 21]; status != want {
				t.Fatalf("wrong secret %d from its own address: %d, want %d", i+1, status, want)
			}
		}
		if status := h.from("198.51.100.1", key, "GET", "/v1/subscriptions"); status != 200 {
			t.Fatalf("the right secret from a fresh address after 25 failures for its key id: %d, want 200", status)
		}
		if status := h.from("198.51.100.1", key, "GET", "/v1/subscriptions"); status != 200 {
			t.Fatalf("again: %d, want 200", status)
		}
		if status := h.from("198.51.100.2", wrong, "GET", "/v1/subscriptions"); status != 429 {
			t.Fatalf("a wrong secret for the throttled key id from a fresh address: %d, want 429", status)
		}
		// A wrong secret refused 429 for its key id still counts against
		// its address: 429 says "wrong" as plainly as 401 does.
		for range 21 {
			h.from("198.51.100.3", wrong, "GET", "/v1/subscriptions")
		}
		if status := h.from("198.51.100.3", key, "GET", "/v1/subscriptions"); status != 429 {
			t.Fatalf("the right secret from an address over its own limit: %d, want 429", status)
		}
		if status := h.from("198.51.100.4", key, "GET", "/v1/subscriptions"); status != 200 {
			t.Fatalf("the right secret from another fresh address: %d, want 200", status)
		}
	})
}
