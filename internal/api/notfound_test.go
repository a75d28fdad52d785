package api_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// TestNotFound_QuotesAtMost64BytesOfTheID (docs/security.md): a 404 for a
// 5,000-byte id quotes 64 bytes of it, cut on a character, then "…".
func TestNotFound_QuotesAtMost64BytesOfTheID(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		// 63 bytes then a 3-byte character: the cut at 64 falls inside it.
		long := strings.Repeat("a", 63) + strings.Repeat("€", 1646)
		if len(long) != 5001 {
			t.Fatalf("id of %d bytes", len(long))
		}
		quoted := `"` + strings.Repeat("a", 63) + `…"`
		for _, c := range []struct {
			who          client
			method, path string
			want         string
		}{
			{h.admin, "GET", "/v1/tenants/" + long, "tenant " + quoted + " not found"},
			{h.admin, "PATCH", "/v1/tenants/" + long, "tenant " + quoted + " not found"},
			{h.admin, "DELETE", "/v1/tenants/acme/keys/" + long, "api key " + quoted + " not found"},
			{acme, "GET", "/v1/subscriptions/" + long, "subscription " + quoted + " not found"},
			{acme, "PATCH", "/v1/subscriptions/" + long, "subscription " + quoted + " not found"},
			{acme, "DELETE", "/v1/subscriptions/" + long, "subscription " + quoted + " not found"},
			{acme, "GET", "/v1/deliveries/" + long, "delivery " + quoted + " not found"},
			{acme, "POST", "/v1/deliveries/" + long + "/replay", "delivery " + quoted + " not found"},
			{acme, "GET", "/v1/events/" + long, "event " + quoted + " not found"},
		} {
			status, _, body := c.who.do(c.method, c.path, "{}")
			wantError(t, status, body, 404, "not_found")
			if msg := errorMessage(t, body); msg != c.want || !utf8.ValidString(msg) {
				t.Errorf("%s %.40s…: message %.200q, want %q", c.method, c.path, msg, c.want)
			}
		}
		// An id of exactly 64 bytes is quoted whole.
		id64 := strings.Repeat("b", 64)
		status, _, body := acme.do("GET", "/v1/subscriptions/"+id64, "")
		if wantError(t, status, body, 404, "not_found"); errorMessage(t, body) != `subscription "`+id64+`" not found` {
			t.Errorf("64-byte id: %s", body)
		}
	})
}
