package api_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// TestHostileInput_AlwaysTheEnvelopeNeverA500: NUL, invalid UTF-8 and
// control characters in path ids, names, headers, cursors and bearer tokens
// get 400, 401 or 404 as the JSON envelope, on both drivers, before they
// reach a database; none of them is logged as an error.
func TestHostileInput_AlwaysTheEnvelopeNeverA500(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		rc := newReceiver(t)
		subID, _ := acme.subscription(rc.URL)
		nulCursor := base64.RawURLEncoding.EncodeToString([]byte("\x00\x00\x00"))
		ffCursor := base64.RawURLEncoding.EncodeToString([]byte("\xff\xfe"))
		sub := `{"name":"a\u0000b","event_types":[{"type":"transaction.posted","schema_major":1}],"destination":{"type":"webhook","url":"` + rc.URL + `"}}`

		type call struct {
			who          client
			method, path string
			body         string
			headers      []string
			status       int
			code         string
		}
		anon := client{t: t, base: h.url}
		var cases []call
		// Every route with a path id, given ids no resource has.
		for _, id := range []string{"%00", "sub_%00", "%ff", "a%ffb", "x%01y", "%e2%80", "dlv_%00", "key_%00"} {
			for _, r := range []struct{ method, path string }{
				{"GET", "/v1/tenants/" + id}, {"PATCH", "/v1/tenants/" + id}, {"POST", "/v1/tenants/" + id + "/keys"},
				{"DELETE", "/v1/tenants/acme/keys/" + id}, {"DELETE", "/v1/tenants/" + id + "/keys/key_1"},
				{"GET", "/v1/subscriptions/" + id}, {"PATCH", "/v1/subscriptions/" + id}, {"DELETE", "/v1/subscriptions/" + id},
				{"POST", "/v1/subscriptions/" + id + "/verify"}, {"POST", "/v1/subscriptions/" + id + "/rotate-secret"},
				{"GET", "/v1/subscriptions/" + id + "/deliveries"}, {"POST", "/v1/subscriptions/" + id + "/replay"},
				{"GET", "/v1/deliveries/" + id}, {"POST", "/v1/deliveries/" + id + "/replay"},
			} {
				body := ""
				if r.method == "PATCH" {
					body = `{"name":"x"}`
				}
				cases = append(cases, call{h.admin, r.method, r.path, body, []string{"X-Tenant-Id", "acme"}, 404, "not_found"},
					call{acme, r.method, r.path, body, nil, 404, "not_found"})
			}
		}
		cases = append(cases,
			// Names with NUL and control characters.
			call{h.admin, "POST", "/v1/tenants", `{"id":"globex","name":"a\u0000b"}`, nil, 400, "invalid"},
			call{h.admin, "POST", "/v1/tenants", `{"id":"globex","name":"a\u0007b"}`, nil, 400, "invalid"},
			call{h.admin, "POST", "/v1/tenants", `{"id":"glo\u0000bex","name":"g"}`, nil, 400, "invalid"},
			call{h.admin, "PATCH", "/v1/tenants/acme", `{"name":"a\u0000b"}`, nil, 400, "invalid"},
			call{acme, "POST", "/v1/subscriptions", sub, nil, 400, "invalid"},
			call{acme, "PATCH", "/v1/subscriptions/" + subID, `{"name":"a\u0000b"}`, nil, 400, "invalid"},
			call{acme, "PATCH", "/v1/subscriptions/" + subID, `{"destination":{"headers":{"X-A":"a\u0000"}}}`, nil, 400, "invalid"},
			// Headers.
			call{h.admin, "GET", "/v1/subscriptions", "", []string{"X-Tenant-Id", "a\xffb"}, 400, "invalid"},
			call{h.admin, "GET", "/v1/events", "", []string{"X-Tenant-Id", "a\xffb"}, 400, "invalid"},
			// Credentials.
			call{client{t, h.url, "shk_key_\xff.x"}, "GET", "/v1/subscriptions", "", nil, 401, "unauthorized"},
			call{client{t, h.url, "shk_key_00.\xff"}, "GET", "/v1/subscriptions", "", nil, 401, "unauthorized"},
			call{client{t, h.url, strings.Repeat("shk_key_ab.", 3000)}, "GET", "/v1/subscriptions", "", nil, 401, "unauthorized"},
			call{anon, "GET", "/v1/subscriptions", "", []string{"Authorization", "Bearer \xff\xfe"}, 401, "unauthorized"},
			// Cursors.
			call{acme, "GET", "/v1/subscriptions?cursor=" + nulCursor, "", nil, 400, "invalid"},
			call{acme, "GET", "/v1/subscriptions?cursor=" + ffCursor, "", nil, 400, "invalid"},
			call{h.admin, "GET", "/v1/tenants?cursor=" + nulCursor, "", nil, 400, "invalid"},
			call{acme, "GET", "/v1/events?after=" + nulCursor, "", nil, 400, "invalid"},
			call{acme, "GET", "/v1/subscriptions/" + subID + "/deliveries?cursor=" + nulCursor, "", nil, 400, "invalid"},
			call{h.admin, "GET", "/v1/admin/rejections?cursor=" + nulCursor, "", nil, 400, "invalid"},
			call{acme, "GET", "/v1/events?types=a%00.b", "", nil, 400, "invalid"},
			// Paths and methods.
			call{acme, "GET", "/v1/nothing-here", "", nil, 404, "not_found"},
			call{anon, "GET", "/nothing", "", nil, 404, "not_found"},
			call{h.admin, "GET", "//v1//tenants", "", nil, 404, "not_found"},
			call{h.admin, "GET", "/v1/tenants/../tenants", "", nil, 404, "not_found"},
			call{h.admin, "PUT", "/v1/tenants", "", nil, 405, "method_not_allowed"},
			call{acme, "DELETE", "/v1/events", "", nil, 405, "method_not_allowed"},
		)
		for _, c := range cases {
			status, hdr, body := c.who.do(c.method, c.path, c.body, c.headers...)
			var env struct {
				Error struct{ Code, Message string }
			}
			if err := json.Unmarshal(body, &env); err != nil || status != c.status || env.Error.Code != c.code {
				t.Errorf("%s %q: %d %s, want %d %s", c.method, c.path, status, body, c.status, c.code)
				continue
			}
			if hdr.Get("Content-Type") != "application/json" {
				t.Errorf("%s %q: Content-Type %q", c.method, c.path, hdr.Get("Content-Type"))
			}
			if c.status == 405 && hdr.Get("Allow") == "" {
				t.Errorf("%s %q: 405 without Allow", c.method, c.path)
			}
		}
		if strings.Contains(h.logs.String(), `"level":"ERROR"`) {
			t.Fatalf("hostile input logged at ERROR:\n%s", h.logs.String())
		}
	})
}

// TestAuth_FailuresAreThrottled: past the limit of failed authentications
// in a minute, the client address answers 429 with Retry-After, even with
// good credentials, until the window ends; failures are counted by reason.
func TestAuth_FailuresAreThrottled(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{authLimit: 3})
		bad := client{t, h.url, "shk_key_0123456789abcdef.wrong"}
		for range 3 {
			if status, _, body := bad.do("GET", "/v1/subscriptions", ""); status != 401 {
				t.Fatalf("failure within the limit: %d %s", status, body)
			}
		}
		bad.do("GET", "/v1/subscriptions", "") // the fourth is over the limit
		status, hdr, body := h.admin.do("GET", "/v1/tenants", "")
		wantError(t, status, body, 429, "rate_limited")
		if ra := hdr.Get("Retry-After"); ra != "60" {
			t.Fatalf("Retry-After = %q, want 60", ra)
		}
		h.clock.Advance(59 * time.Second)
		if _, hdr, _ := h.admin.do("GET", "/v1/tenants", ""); hdr.Get("Retry-After") != "1" {
			t.Fatalf("a second before the window ends: Retry-After %q", hdr.Get("Retry-After"))
		}
		h.clock.Advance(time.Second)
		h.admin.json("GET", "/v1/tenants", "", 200, nil)
		_, _, m := h.admin.do("GET", "/metrics", "")
		for _, want := range []string{`streaming_hub_auth_failures_total{reason="invalid"} 4`, `streaming_hub_auth_failures_total{reason="throttled"} 2`} {
			if !strings.Contains(string(m), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}
