package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/apikey"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A single-tenant hub (MULTI_TENANT_ENABLED=false or
// STREAMING_HUB_TENANT_ID) acts on its one tenant alone: creating another
// tenant, its keys, portal links or subscriptions, reading any of them,
// naming it in X-Tenant-Id, or using its key (from before the hub served
// one tenant) is 403 tenant_not_served, and nothing is created; the served
// tenant works as before (docs/security.md#one-tenant-everywhere).
func TestSingleTenant_TheAPIRefusesEveryOtherTenant(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{served: "acme"})
		ctx := context.Background()
		acme := h.tenant("acme")
		// "old" is in the roster from before, with a key and a subscription.
		if _, err := h.store.CreateTenant(ctx, store.CreateTenantParams{ID: "old", Name: "Old"}); err != nil {
			t.Fatal(err)
		}
		k, oldKey := apikey.New("old", h.clock.Now())
		if err := h.store.CreateAPIKey(ctx, k); err != nil {
			t.Fatal(err)
		}
		oldSub, err := h.store.CreateSubscription(ctx, storetest.NewSubscription("old", "sub_old"))
		if err != nil {
			t.Fatal(err)
		}
		old := client{t, h.url, oldKey}
		sub := `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com/hook"}}`

		refused := []struct {
			c                  client
			method, path, body string
			headers            []string
		}{
			{h.admin, "POST", "/v1/tenants", `{"id":"evil"}`, nil},
			{h.admin, "GET", "/v1/tenants/old", "", nil},
			{h.admin, "GET", "/v1/tenants/evil", "", nil},
			{h.admin, "PATCH", "/v1/tenants/old", `{"name":"x"}`, nil},
			{h.admin, "POST", "/v1/tenants/old/keys", "", nil},
			{h.admin, "GET", "/v1/tenants/old/keys", "", nil},
			{h.admin, "DELETE", "/v1/tenants/old/keys/" + k.ID, "", nil},
			{h.admin, "POST", "/v1/tenants/old/portal-links", "", nil},
			{h.admin, "GET", "/v1/tenants/old/portal-links", "", nil},
			{h.admin, "GET", "/v1/subscriptions", "", []string{"X-Tenant-Id", "old"}},
			{h.admin, "GET", "/v1/subscriptions/" + oldSub.ID, "", []string{"X-Tenant-Id", "old"}},
			{h.admin, "POST", "/v1/subscriptions", sub, []string{"X-Tenant-Id", "evil"}},
			{old, "GET", "/v1/subscriptions", "", nil},
			{old, "POST", "/v1/subscriptions", sub, nil},
			{old, "GET", "/v1/tenants/old", "", nil},
			{old, "GET", "/v1/events", "", nil},
			{acme, "GET", "/v1/tenants/old", "", nil},
		}
		for _, c := range refused {
			status, _, b := c.c.do(c.method, c.path, c.body, c.headers...)
			if status != http.StatusForbidden || !strings.Contains(string(b), `"code":"tenant_not_served"`) ||
				!strings.Contains(string(b), `this hub serves tenant \"acme\" only`) {
				t.Errorf("%s %s %v: %d %s, want 403 tenant_not_served", c.method, c.path, c.headers, status, b)
			}
		}
		if _, err := h.store.GetTenant(ctx, "evil"); err == nil {
			t.Error("tenant evil was created")
		}
		if keys, _ := h.store.ListAPIKeys(ctx, "old"); len(keys) != 1 {
			t.Errorf("old has %d keys, want its 1", len(keys))
		}
		if subs, _ := h.store.ListSubscriptions(ctx, listAll("old")); len(subs) != 1 {
			t.Errorf("old has %d subscriptions, want its 1", len(subs))
		}
		if subs, _ := h.store.ListSubscriptions(ctx, listAll("evil")); len(subs) != 0 {
			t.Errorf("evil has %d subscriptions", len(subs))
		}

		// The roster shows the served tenant alone, a lookup finds no
		// other tenant's resource.
		var list struct{ Data []struct{ ID string } }
		h.admin.json("GET", "/v1/tenants", "", 200, &list)
		if len(list.Data) != 1 || list.Data[0].ID != "acme" {
			t.Errorf("GET /v1/tenants: %+v", list.Data)
		}
		var found struct {
			TenantIDs []string `json:"tenant_ids"`
		}
		h.admin.json("GET", "/v1/admin/lookup?kind=subscription&id="+oldSub.ID, "", 200, &found)
		if len(found.TenantIDs) != 0 {
			t.Errorf("lookup of old's subscription: %v", found.TenantIDs)
		}

		// The served tenant: as before.
		h.admin.json("GET", "/v1/tenants/acme", "", 200, nil)
		h.admin.json("POST", "/v1/tenants/acme/keys", "", 201, nil)
		h.admin.json("POST", "/v1/subscriptions", sub, 201, nil)
		acme.json("POST", "/v1/subscriptions", sub, 201, nil)
		acme.json("GET", "/v1/tenants/acme", "", 200, nil)
		if status, _, b := h.admin.do("GET", "/v1/subscriptions", "", "X-Tenant-Id", "acme"); status != 200 {
			t.Errorf("X-Tenant-Id acme: %d %s", status, b)
		}
		if status, _, b := h.admin.do("POST", "/v1/tenants", `{"id":"acme"}`); status != http.StatusConflict {
			t.Errorf("creating acme again: %d %s", status, b)
		}
	})
}
