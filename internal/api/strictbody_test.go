package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// errorMessage is the message of an error answer.
func errorMessage(t testing.TB, body []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("not the error envelope: %s", body)
	}
	return e.Error.Message
}

// wantRefused: 400 invalid whose message is want.
func wantRefused(t testing.TB, what string, status int, body []byte, want string) {
	t.Helper()
	wantError(t, status, body, 400, "invalid_request")
	if got := errorMessage(t, body); got != want {
		t.Fatalf("%s: message %q, want %q", what, got, want)
	}
}

// TestStrictJSON_InvalidUTF8AndDuplicateKeysAre400AndNothingIsStored
// (docs/security.md): a body with bytes that are not UTF-8 in any string, or
// a key twice in one object, is 400 naming the field, on every endpoint that
// reads a body, and nothing of it is stored with U+FFFD.
func TestStrictJSON_InvalidUTF8AndDuplicateKeysAre400AndNothingIsStored(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		admin := h.admin

		status, _, body := admin.do("POST", "/v1/tenants", "{\"id\":\"acme\",\"name\":\"Ac\xffme\"}")
		wantRefused(t, "tenant name", status, body, "name: not valid UTF-8")
		status, _, body = admin.do("POST", "/v1/tenants", `{"id":"acme","name":"Acme","name":"Evil"}`)
		wantRefused(t, "tenant name twice", status, body, "name: duplicate key")
		status, _, body = admin.do("POST", "/v1/tenants", `{"id":"acme","name":"\udc00"}`)
		wantRefused(t, "a lone surrogate", status, body, "name: not valid UTF-8")
		if status, _, _ := admin.do("GET", "/v1/tenants/acme", ""); status != 404 {
			t.Fatalf("a refused tenant was stored: %d", status)
		}

		acme := h.tenant("acme")
		status, _, body = admin.do("PATCH", "/v1/tenants/acme", "{\"name\":\"x\xc3\"}")
		wantRefused(t, "tenant rename", status, body, "name: not valid UTF-8")

		sub := func(name, headers, filters, auth string) string {
			return `{"name":` + name + `,"event_types":[{"type":"transaction.posted","schema_major":1}],` +
				`"destination":{"type":"webhook","url":"https://example.com/hook","headers":` + headers + `,"auth":` + auth + `},` +
				`"filters":` + filters + `}`
		}
		for _, c := range []struct{ body, want string }{
			{sub("\"a\xffb\"", `{}`, `[]`, `null`), "name: not valid UTF-8"},
			{sub(`"n"`, "{\"X-A\":\"v\xfe\"}", `[]`, `null`), "destination.headers.X-A: not valid UTF-8"},
			{sub(`"n"`, "{\"X-\xfe\":\"v\"}", `[]`, `null`), "destination.headers: a key is not valid UTF-8"},
			{sub(`"n"`, `{}`, "[{\"exact\":{\"subject\":\"s\xe2\x82\"}}]", `null`), "filters[0].exact.subject: not valid UTF-8"},
			{sub(`"n"`, `{}`, `[]`, "{\"type\":\"bearer\",\"token\":\"t\xff\"}"), "destination.auth.token: not valid UTF-8"},
			{sub(`"n"`, `{"X-A":"1","X-A":"2"}`, `[]`, `null`), "destination.headers.X-A: duplicate key"},
			{sub(`"n"`, `{}`, `[{"exact":{"subject":"a","subject":"b"}}]`, `null`), "filters[0].exact.subject: duplicate key"},
			{sub(`"n"`, `{}`, `[{"any":[{"exact":{"type":"a"}}],"any":[{"exact":{"type":"b"}}]}]`, `null`), "filters[0].any: duplicate key"},
			{`{"name":"n","name":"m"}`, "name: duplicate key"},
		} {
			status, _, body := acme.do("POST", "/v1/subscriptions", c.body)
			wantRefused(t, c.body, status, body, c.want)
		}
		var list struct{ Data []json.RawMessage }
		acme.json("GET", "/v1/subscriptions", "", 200, &list)
		if len(list.Data) != 0 {
			t.Fatalf("refused subscriptions were stored: %s", list.Data)
		}

		// A stored subscription is left as it was by a refused PATCH.
		var created struct{ ID string }
		acme.json("POST", "/v1/subscriptions", sub(`"hooks"`, `{"X-A":"v"}`, `[]`, `null`), 201, &created)
		base := "/v1/subscriptions/" + created.ID
		status, _, body = acme.do("PATCH", base, "{\"destination\":{\"headers\":{\"X-A\":\"\xc0\xaf\"}}}")
		wantRefused(t, "PATCH headers", status, body, "destination.headers.X-A: not valid UTF-8")
		status, _, body = acme.do("PATCH", base, "{\"retry_schedule\":[\"5s\",\"1m\xff\"]}")
		wantRefused(t, "PATCH retry_schedule", status, body, "retry_schedule[1]: not valid UTF-8")
		status, _, body = acme.do("PATCH", base, `{"rate_limit":{"per_second":1,"per_second":2}}`)
		wantRefused(t, "PATCH rate_limit", status, body, "rate_limit.per_second: duplicate key")
		status, _, body = acme.do("POST", base+"/rotate-secret", "{\"overlap\":\"1h\xff\"}")
		wantRefused(t, "rotate-secret", status, body, "overlap: not valid UTF-8")
		status, _, body = acme.do("POST", base+"/test", "{\"data\":{\"k\":[\"\xff\"]}}")
		wantRefused(t, "test event data", status, body, "data.k[0]: not valid UTF-8")
		status, _, body = acme.do("POST", base+"/test", `{"data":{"k":1,"k":2}}`)
		wantRefused(t, "test event data", status, body, "data.k: duplicate key")

		_, _, got := acme.do("GET", base, "")
		var stored struct {
			Name        string
			Destination struct{ Headers map[string]string }
		}
		if err := json.Unmarshal(got, &stored); err != nil || stored.Name != "hooks" || stored.Destination.Headers["X-A"] != "v" {
			t.Fatalf("after refused PATCHes: %s", got)
		}
		_, _, tenants := admin.do("GET", "/v1/tenants", "")
		for _, b := range [][]byte{got, tenants} {
			if strings.Contains(string(b), "\uFFFD") || strings.Contains(strings.ToLower(string(b)), `\ufffd`) {
				t.Fatalf("U+FFFD stored: %s", b)
			}
		}
	})
}
