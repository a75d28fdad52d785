package api_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// GET /v1/admin/disabled-subscriptions: every tenant's subscriptions
// disabled with a reason, most recently disabled first, paged, each as the
// subscription's own JSON (its backfill too) and never with a secret; the
// enabled, the created disabled and the deleted are not there.
func TestDisabledSubscriptions_AdminListsEveryTenantsNewestFirstWithoutSecrets(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		create := func(c client, name, extra string) (id, secret string) {
			t.Helper()
			var s struct {
				ID            string
				SigningSecret string `json:"signing_secret"`
			}
			c.json("POST", "/v1/subscriptions", `{"name":"`+name+`","event_types":[{"type":"transaction.posted","schema_major":1}],
				"destination":{"type":"webhook","url":"https://example.com/`+name+`","auth":{"type":"bearer","token":"tok-`+name+`-do-not-show"}}`+extra+`}`, 201, &s)
			return s.ID, s.SigningSecret
		}
		// Auto-disabled two hours ago, as dispatch does it: in the store.
		failing, failingSecret := create(acme, "failing", `,"backfill":{"since":"2026-11-30T11:00:00Z"}`)
		sub, err := h.store.GetSubscription(context.Background(), "acme", failing)
		if err != nil {
			t.Fatal(err)
		}
		at := h.clock.Now().Add(-2 * time.Hour)
		sub.Enabled, sub.DisabledReason, sub.DisabledAt = false, "auto-disabled: failing for 120h", &at
		if _, err := h.store.UpdateSubscription(context.Background(), sub); err != nil {
			t.Fatal(err)
		}
		// Disabled through the API now, by another tenant.
		paused, pausedSecret := create(globex, "paused", "")
		globex.json("PATCH", "/v1/subscriptions/"+paused, `{"enabled":false}`, 200, nil)
		// Not listed: enabled, created disabled (no reason), deleted.
		create(acme, "live", "")
		create(globex, "off", `,"enabled":false`)
		gone, _ := create(acme, "gone", "")
		acme.json("PATCH", "/v1/subscriptions/"+gone, `{"enabled":false}`, 200, nil)
		acme.json("DELETE", "/v1/subscriptions/"+gone, "", 204, nil)

		status, _, body := h.admin.do("GET", "/v1/admin/disabled-subscriptions", "")
		if status != 200 {
			t.Fatalf("GET = %d %s", status, body)
		}
		for _, secret := range []string{failingSecret, pausedSecret, "do-not-show", "whsec_", "secrets"} {
			if strings.Contains(string(body), secret) {
				t.Fatalf("the answer shows %q: %s", secret, body)
			}
		}
		type disabled struct {
			ID             string     `json:"id"`
			TenantID       string     `json:"tenant_id"`
			Name           string     `json:"name"`
			Enabled        bool       `json:"enabled"`
			DisabledReason *string    `json:"disabled_reason"`
			DisabledAt     *time.Time `json:"disabled_at"`
			Destination    struct {
				URL  string `json:"url"`
				Auth *struct {
					Type string `json:"type"`
				} `json:"auth"`
			} `json:"destination"`
			Backfill *struct {
				Since string `json:"since"`
			} `json:"backfill"`
		}
		var all struct {
			Data       []disabled
			NextCursor *string `json:"next_cursor"`
		}
		h.admin.json("GET", "/v1/admin/disabled-subscriptions", "", 200, &all)
		if len(all.Data) != 2 || all.NextCursor != nil {
			t.Fatalf("listed %+v, next_cursor %v; want paused then failing, one page", all.Data, all.NextCursor)
		}
		p, f := all.Data[0], all.Data[1]
		if p.ID != paused || p.TenantID != "globex" || p.Name != "paused" || p.Enabled ||
			p.DisabledReason == nil || *p.DisabledReason != "disabled through the API" ||
			p.DisabledAt == nil || !p.DisabledAt.Equal(h.clock.Now()) || p.Backfill != nil {
			t.Errorf("first = %+v, want globex's paused, disabled through the API now", p)
		}
		if f.ID != failing || f.TenantID != "acme" || f.DisabledReason == nil || *f.DisabledReason != "auto-disabled: failing for 120h" ||
			f.DisabledAt == nil || !f.DisabledAt.Equal(at) || f.Destination.URL != "https://example.com/failing" ||
			f.Destination.Auth == nil || f.Destination.Auth.Type != "bearer" ||
			f.Backfill == nil || f.Backfill.Since != "2026-11-30T11:00:00Z" {
			t.Errorf("second = %+v, want acme's failing, auto-disabled two hours ago, with its backfill", f)
		}

		// One a page: the same two, then no cursor.
		var ids []string
		cursor := ""
		for range 3 {
			var page struct {
				Data       []disabled
				NextCursor *string `json:"next_cursor"`
			}
			h.admin.json("GET", "/v1/admin/disabled-subscriptions?limit=1"+cursor, "", 200, &page)
			for _, s := range page.Data {
				ids = append(ids, s.ID)
			}
			if page.NextCursor == nil {
				break
			}
			cursor = "&cursor=" + *page.NextCursor
		}
		if strings.Join(ids, ",") != paused+","+failing {
			t.Fatalf("page by page: %v, want %s then %s", ids, paused, failing)
		}
	})
}

func TestDisabledSubscriptions_AdminOnlyAndBadPagesRefused(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		anon := client{t, h.url, ""}

		status, _, body := anon.do("GET", "/v1/admin/disabled-subscriptions", "")
		wantError(t, status, body, 401, "unauthorized")
		status, _, body = acme.do("GET", "/v1/admin/disabled-subscriptions", "")
		wantError(t, status, body, 403, "forbidden")
		status, _, body = acme.do("GET", "/v1/admin/disabled-subscriptions", "", "X-Tenant-Id", "acme")
		wantError(t, status, body, 403, "forbidden")

		for _, q := range []string{"limit=0", "limit=501", "limit=ten", "limit=-1"} {
			status, _, body := h.admin.do("GET", "/v1/admin/disabled-subscriptions?"+q, "")
			wantError(t, status, body, 400, "invalid")
			if !strings.Contains(string(body), "limit") {
				t.Errorf("%s: %s does not name limit", q, body)
			}
		}
		for _, c := range []string{"***", base64.RawURLEncoding.EncodeToString([]byte("no-slash")),
			base64.RawURLEncoding.EncodeToString([]byte("yesterday/sub_x")), base64.RawURLEncoding.EncodeToString([]byte("-/"))} {
			status, _, body := h.admin.do("GET", "/v1/admin/disabled-subscriptions?cursor="+c, "")
			wantError(t, status, body, 400, "invalid")
			if !strings.Contains(string(body), "cursor") {
				t.Errorf("cursor %s: %s does not name cursor", c, body)
			}
		}
	})
}
