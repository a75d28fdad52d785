package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const validSub = `{"name":"ledger-hooks",
 "event_types":[{"type":"transaction.posted","schema_major":1}],
 "destination":{"type":"webhook","url":"https://example.com/hook","headers":{"X-Custom":"v"},
                "auth":{"type":"bearer","token":"tok-SECRET-123"}},
 "retry_schedule":["5s","1m"],
 "max_in_flight":1,
 "enabled":true}`

func TestSubscriptions_CreateAnswersTheResourceAndTheSecretOnce(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		var got map[string]any
		acme.json("POST", "/v1/subscriptions", validSub, 201, &got)
		want := map[string]any{
			"tenant_id": "acme", "name": "ledger-hooks", "max_in_flight": 1.0, "enabled": true,
			"verification_state": "pending", "disabled_reason": nil, "disabled_at": nil, "breaker_state": "closed",
			"failure_span": nil, "created_at": "2026-11-30T12:00:00Z", "updated_at": "2026-11-30T12:00:00Z",
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s = %v, want %v", k, got[k], v)
			}
		}
		if fmt.Sprint(got["event_types"]) != "[map[schema_major:1 type:transaction.posted]]" ||
			fmt.Sprint(got["destination"]) != "map[auth:map[type:bearer] headers:map[X-Custom:v] type:webhook url:https://example.com/hook]" ||
			fmt.Sprint(got["retry_schedule"]) != "[5s 1m]" {
			t.Errorf("event_types %v, destination %v, retry_schedule %v", got["event_types"], got["destination"], got["retry_schedule"])
		}
		secret, _ := got["signing_secret"].(string)
		id, _ := got["id"].(string)
		if !strings.HasPrefix(secret, "whsec_") || !strings.HasPrefix(id, "sub_") {
			t.Fatalf("id %q, secret %q", id, secret)
		}
		var again map[string]any
		acme.json("GET", "/v1/subscriptions/"+id, "", 200, &again)
		if _, ok := again["signing_secret"]; ok {
			t.Fatal("GET shows the signing secret")
		}
		// Defaults: max_in_flight 1, enabled, no retry override.
		acme.json("POST", "/v1/subscriptions", `{"name":"n","event_types":[{"type":"a.b","schema_major":2}],"destination":{"url":"https://example.com"}}`, 201, &got)
		if got["max_in_flight"] != 1.0 || got["enabled"] != true || got["retry_schedule"] != nil || fmt.Sprint(got["destination"]) != "map[auth:<nil> headers:map[] type:webhook url:https://example.com]" {
			t.Fatalf("defaults: %v", got)
		}
	})
}

func TestSubscriptions_ValidationNamesTheField(t *testing.T) {
	testkit.Long(t)
	cases := []struct{ body, want string }{
		{`{`, "invalid JSON body"},
		{`{"name":"n","bogus":1}`, `unknown field "bogus"`},
		{`[1]`, "invalid JSON body"},
		{`{"name":"","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com"}}`, "name: required"},
		{`{"name":"n","destination":{"url":"https://e.com"}}`, "event_types: at least one is required"},
		{`{"name":"n","event_types":[],"destination":{"url":"https://e.com"}}`, "event_types: at least one is required"},
		{`{"name":"n","event_types":[{"type":"posted","schema_major":1}],"destination":{"url":"https://e.com"}}`, "event_types[0].type"},
		{`{"name":"n","event_types":[{"type":"studio.lerian.a.b","schema_major":1}],"destination":{"url":"https://e.com"}}`, "event_types[0].type"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":0}],"destination":{"url":"https://e.com"}}`, "event_types[0].schema_major"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1},{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com"}}`, "event_types[1]: a.b@1 is listed twice"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1,"x":1}],"destination":{"url":"https://e.com"}}`, `unknown field "x"`},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":"1"}],"destination":{"url":"https://e.com"}}`, "schema_major must be int"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}]}`, "destination: required"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{}}`, "destination.url: required"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"type":"sqs","url":"https://e.com"}}`, "destination.type: must be webhook"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"/hook"}}`, "destination.url: must be an absolute http(s) URL"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"ftp://e.com"}}`, "destination.url: must be an absolute http(s) URL"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"http://e.com"}}`, "destination.url: must be https"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://user:pw@e.com"}}`, "credentials in the URL"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://127.0.0.1/hook"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://10.1.2.3/hook"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://169.254.169.254/latest"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://[::1]/"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://localhost/"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://[::ffff:0:7f00:1]/hook"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://[::ffff:0:a9fe:a9fe]/hook"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://[fec0::1]/hook"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://[feff::1]/hook"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://[2001:10::1]/hook"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://[3fff::1]/hook"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://[5f00::1]/hook"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://192.88.99.1/hook"}}`, "private destinations are not allowed"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","headers":{"X-Lerian-Event-Id":"x"}}}`, "X-Lerian-Event-Id is set by the hub"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","headers":{"content-type":"x"}}}`, "content-type is set by the hub"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","headers":{"Host":"x"}}}`, "Host is set by the hub"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","headers":{"Content-Length":"1"}}}`, "Content-Length is set by the hub"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","headers":{"webhook-signature":"v1,x"}}}`, "webhook-signature is set by the hub"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","headers":{"ce-id":"x"}}}`, "ce-id is set by the hub"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","headers":{"Bad Name":"x"}}}`, "not a valid header name"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","headers":{"X-A":"a\r\nX-Injected: 1"}}}`, "must not contain control characters"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","auth":{"type":"bearer"}}}`, "destination.auth.token: required"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","auth":{"type":"basic","username":"u"}}}`, "username and password are required"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","auth":{"type":"header","name":"Authorization","value":"v"}}}`, "Authorization is set by the hub"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","auth":{"type":"oauth"}}}`, "destination.auth.type: must be bearer, basic, header or oauth2_client_credentials"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","auth":{"type":"bearer","token":"t","scope":"x"}}}`, `destination.auth.scope: not a field of the bearer type`},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com","auth":{"type":"bearer","token":"t","issuer":"x"}}}`, `destination.auth: unknown field "issuer"`},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com"},"retry_schedule":[]}`, "retry_schedule: 1 to 12 steps"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com"},"retry_schedule":["1s","1s","1s","1s","1s","1s","1s","1s","1s","1s","1s","1s","1s"]}`, "retry_schedule: 1 to 12 steps"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com"},"retry_schedule":["0s"]}`, "retry_schedule[0]"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com"},"retry_schedule":["5s","10h1s"]}`, "retry_schedule[1]"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com"},"retry_schedule":["soon"]}`, "retry_schedule[0]"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com"},"retry_schedule":[5]}`, "retry_schedule"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com"},"max_in_flight":0}`, "max_in_flight: must be 1 to 64"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com"},"max_in_flight":65}`, "max_in_flight: must be 1 to 64"},
		{`{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://e.com"},"enabled":"yes"}`, "enabled must be bool"},
		{`{"name":"` + strings.Repeat("n", 2<<20) + `"}`, "request body larger than"},
	}
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		for _, c := range cases {
			status, _, body := acme.do("POST", "/v1/subscriptions", c.body)
			var e struct {
				Error struct{ Code, Message string }
			}
			json.Unmarshal(body, &e)
			if status != 400 || e.Error.Code != "invalid" || !strings.Contains(e.Error.Message, c.want) {
				t.Errorf("body %.80s...\n got %d %s\nwant 400 naming %q", c.body, status, body, c.want)
			}
		}
		if subs, _ := h.store.ListSubscriptions(context.Background(), listAll("acme")); len(subs) != 0 {
			t.Fatalf("invalid requests stored %d subscriptions", len(subs))
		}

		// PATCH validates the result and changes nothing when it fails.
		id, _ := acme.subscription("https://example.com/hook")
		status, _, body := acme.do("PATCH", "/v1/subscriptions/"+id, `{"name":"renamed","retry_schedule":["11h"]}`)
		wantError(t, status, body, 400, "invalid")
		var got struct{ Name string }
		acme.json("GET", "/v1/subscriptions/"+id, "", 200, &got)
		if got.Name != "hooks" {
			t.Fatalf("a rejected PATCH changed the name to %q", got.Name)
		}
	})
}

func TestSubscriptions_PatchMergesAndAURLChangeNeedsVerifyingAgain(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		rc := newReceiver(t)
		var sub map[string]any
		acme.json("POST", "/v1/subscriptions", strings.Replace(validSub, "https://example.com/hook", rc.URL, 1), 201, &sub)
		id := sub["id"].(string)
		acme.json("POST", "/v1/subscriptions/"+id+"/verify", "", 200, &sub)
		if sub["verification_state"] != "active" {
			t.Fatalf("verify: %v", sub)
		}
		h.clock.Advance(1000)
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"name":"renamed","destination":{"headers":{"X-Other":"w"}},"retry_schedule":null}`, 200, &sub)
		if sub["name"] != "renamed" || fmt.Sprint(sub["destination"]) != "map[auth:map[type:bearer] headers:map[X-Other:w] type:webhook url:"+rc.URL+"]" ||
			sub["retry_schedule"] != nil || sub["verification_state"] != "active" || sub["updated_at"] == sub["created_at"] {
			t.Fatalf("after merge: %v", sub)
		}
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"destination":{"auth":null}}`, 200, &sub)
		if fmt.Sprint(sub["destination"].(map[string]any)["auth"]) != "<nil>" {
			t.Fatalf("auth not cleared: %v", sub["destination"])
		}
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"destination":{"url":"`+rc.URL+`/elsewhere"}}`, 200, &sub)
		if sub["verification_state"] != "pending" {
			t.Fatalf("a new URL kept verification_state %v", sub["verification_state"])
		}
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"enabled":false}`, 200, &sub)
		if sub["enabled"] != false || sub["disabled_reason"] != "disabled through the API" || sub["disabled_at"] == nil {
			t.Fatalf("disable: %v", sub)
		}
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"enabled":true}`, 200, &sub)
		if sub["enabled"] != true || sub["disabled_reason"] != nil || sub["disabled_at"] != nil {
			t.Fatalf("enable: %v", sub)
		}
		if status, _, _ := acme.do("DELETE", "/v1/subscriptions/"+id, ""); status != 204 {
			t.Fatalf("delete = %d", status)
		}
		if status, _, _ := acme.do("GET", "/v1/subscriptions/"+id, ""); status != 404 {
			t.Fatalf("get after delete = %d", status)
		}
	})
}

func TestSubscriptions_AnotherTenantsResourceIsAlways404(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		rc := newReceiver(t)
		id, _ := acme.subscription(rc.URL)
		routes := []struct{ method, path, body string }{
			{"GET", "/v1/subscriptions/" + id, ""},
			{"PATCH", "/v1/subscriptions/" + id, `{"name":"mine now"}`},
			{"POST", "/v1/subscriptions/" + id + "/verify", ""},
			{"POST", "/v1/subscriptions/" + id + "/rotate-secret", `{}`},
			{"DELETE", "/v1/subscriptions/" + id, ""},
		}
		for _, r := range routes {
			status, _, body := globex.do(r.method, r.path, r.body)
			wantError(t, status, body, 404, "not_found")
			status, _, body = h.admin.do(r.method, r.path, r.body, "X-Tenant-Id", "globex")
			wantError(t, status, body, 404, "not_found")
		}
		var list struct{ Data []any }
		globex.json("GET", "/v1/subscriptions", "", 200, &list)
		if len(list.Data) != 0 {
			t.Fatalf("globex lists %d of acme's subscriptions", len(list.Data))
		}
		if rc.count() != 0 {
			t.Fatal("another tenant's verify probed acme's destination")
		}
		var sub struct{ Name string }
		acme.json("GET", "/v1/subscriptions/"+id, "", 200, &sub)
		if sub.Name != "hooks" {
			t.Fatalf("globex changed acme's subscription: %q", sub.Name)
		}
	})
}

func TestSubscriptions_SecretsAreNeverDisclosed(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		rc := newReceiver(t)
		var created struct {
			ID            string
			SigningSecret string `json:"signing_secret"`
		}
		body := `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"` + rc.URL +
			`","auth":{"type":"header","name":"X-Api-Key","value":"hdr-SECRET-456"}}}`
		acme.json("POST", "/v1/subscriptions", body, 201, &created)
		acme.json("PATCH", "/v1/subscriptions/"+created.ID, `{"destination":{"auth":{"type":"basic","username":"user","password":"pw-SECRET-789"}}}`, 200, nil)
		var rotated struct {
			SigningSecret string `json:"signing_secret"`
		}
		acme.json("POST", "/v1/subscriptions/"+created.ID+"/rotate-secret", "", 200, &rotated)
		acme.json("POST", "/v1/subscriptions/"+created.ID+"/verify", "", 200, nil)
		secrets := []string{"hdr-SECRET-456", "pw-SECRET-789", created.SigningSecret, rotated.SigningSecret,
			strings.TrimPrefix(created.SigningSecret, "whsec_")}

		var seen strings.Builder
		for _, path := range []string{"/v1/subscriptions/" + created.ID, "/v1/subscriptions"} {
			_, _, b := acme.do("GET", path, "")
			seen.Write(b)
		}
		_, _, b := acme.do("PATCH", "/v1/subscriptions/"+created.ID, `{"name":"x"}`)
		seen.Write(b)
		seen.WriteString(h.logs.String())
		stored, err := h.store.GetSubscription(context.Background(), "acme", created.ID)
		if err != nil {
			t.Fatal(err)
		}
		seen.Write(stored.Secrets)
		for _, s := range secrets {
			if strings.Contains(seen.String(), s) {
				t.Errorf("secret %q is visible in a GET, a PATCH answer, the log or the stored row", s)
			}
		}
		// And yet they are there: the probe carried the credential.
		req, _ := rc.last()
		if u, p, ok := req.BasicAuth(); !ok || u != "user" || p != "pw-SECRET-789" {
			t.Fatalf("probe auth = %q %q %v", u, p, ok)
		}
	})
}
