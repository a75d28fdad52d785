package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const rateLimitedSub = `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://example.com/hook"},
 "rate_limit":{"per_second":50}}`

func TestSubscriptions_RateLimitIsShownPatchedAndCleared(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		var got struct {
			ID        string          `json:"id"`
			RateLimit json.RawMessage `json:"rate_limit"`
		}
		acme.json("POST", "/v1/subscriptions", rateLimitedSub, 201, &got)
		if string(got.RateLimit) != `{"per_second":50}` {
			t.Fatalf("created rate_limit %s", got.RateLimit)
		}
		acme.json("PATCH", "/v1/subscriptions/"+got.ID, `{"rate_limit":{"per_second":10000}}`, 200, &got)
		acme.json("GET", "/v1/subscriptions/"+got.ID, "", 200, &got)
		if string(got.RateLimit) != `{"per_second":10000}` {
			t.Fatalf("patched rate_limit %s", got.RateLimit)
		}
		acme.json("PATCH", "/v1/subscriptions/"+got.ID, `{"name":"renamed"}`, 200, &got)
		if string(got.RateLimit) != `{"per_second":10000}` {
			t.Fatalf("a PATCH without rate_limit changed it to %s", got.RateLimit)
		}
		acme.json("PATCH", "/v1/subscriptions/"+got.ID, `{"rate_limit":null}`, 200, &got)
		acme.json("GET", "/v1/subscriptions/"+got.ID, "", 200, &got)
		if string(got.RateLimit) != `null` {
			t.Fatalf("cleared rate_limit %s", got.RateLimit)
		}

		for value, want := range map[string]string{
			`{"per_second":0}`:           "rate_limit.per_second: must be 1 to 10000",
			`{"per_second":10001}`:       "rate_limit.per_second: must be 1 to 10000",
			`{"per_second":-3}`:          "rate_limit.per_second: must be 1 to 10000",
			`{}`:                         "rate_limit.per_second: required",
			`{"per_second":"5"}`:         "rate_limit",
			`{"per_second":5,"burst":9}`: `rate_limit: unknown field "burst"`,
			`5`:                          "rate_limit",
		} {
			create := `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://example.com/hook"},"rate_limit":` + value + `}`
			wantInvalid(t, acme, "POST", "/v1/subscriptions", create, want)
			wantInvalid(t, acme, "PATCH", "/v1/subscriptions/"+got.ID, `{"rate_limit":`+value+`}`, want)
		}
	})
}

// wantInvalid checks that a request is refused with 400 invalid naming want.
func wantInvalid(t *testing.T, c client, method, path, body, want string) {
	t.Helper()
	status, _, answer := c.do(method, path, body)
	var e struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal(answer, &e)
	if status != 400 || e.Error.Code != "invalid" || !strings.Contains(e.Error.Message, want) {
		t.Errorf("%s %s %.200s\n got %d %s\nwant 400 naming %q", method, path, body, status, answer, want)
	}
}
