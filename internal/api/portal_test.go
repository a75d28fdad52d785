package api_test

import (
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestPortalLinks_AdminOnlyTTLBoundedStoredHashed(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		var link struct {
			URL       string    `json:"url"`
			ExpiresAt time.Time `json:"expires_at"`
		}
		h.admin.json("POST", "/v1/tenants/acme/portal-links", `{"ttl":"2h"}`, 201, &link)
		token, ok := strings.CutPrefix(link.URL, "/console/portal/")
		if !ok || len(token) < 40 || !link.ExpiresAt.Equal(h.clock.Now().UTC().Truncate(time.Microsecond).Add(2*time.Hour)) {
			t.Fatalf("link %+v", link)
		}
		got, err := h.store.GetPortalLink(t.Context(), store.HashToken(token))
		if err != nil || got.TenantID != "acme" || got.Revoked {
			t.Fatalf("stored link %+v, %v", got, err)
		}
		if _, err := h.store.GetPortalLink(t.Context(), token); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatal("the token itself is stored: only its hash may be")
		}
		// No body: one hour.
		h.admin.json("POST", "/v1/tenants/acme/portal-links", "", 201, &link)
		if !link.ExpiresAt.Equal(h.clock.Now().UTC().Truncate(time.Microsecond).Add(time.Hour)) {
			t.Fatalf("default ttl: expires %v", link.ExpiresAt)
		}
		for _, body := range []string{`{"ttl":"25h"}`, `{"ttl":"0s"}`, `{"ttl":"-1h"}`, `{"ttl":"soon"}`, `{"ttl":5}`} {
			status, _, b := h.admin.do("POST", "/v1/tenants/acme/portal-links", body)
			if status != 400 || !strings.Contains(string(b), "ttl") {
				t.Errorf("%s: %d %s, want 400 naming ttl", body, status, b)
			}
		}
		if status, _, _ := h.admin.do("POST", "/v1/tenants/ghost/portal-links", ""); status != 404 {
			t.Errorf("unknown tenant: %d, want 404", status)
		}
		if status, _, _ := acme.do("POST", "/v1/tenants/acme/portal-links", ""); status != 403 {
			t.Errorf("tenant key: %d, want 403", status)
		}
	})
}
