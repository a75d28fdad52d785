package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A subscription's transform
// (docs/filters-and-transforms.md) is saved on create,
// shown, changed and cleared by PATCH; a program that does not compile, or is
// too long, is 400 naming transform and changes nothing.
func TestTransform_CreateShowPatchClear(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		var sub struct {
			ID        string
			Transform *string `json:"transform"`
		}
		acme.json("POST", "/v1/subscriptions", `{"name":"t","event_types":[{"type":"transaction.posted","schema_major":1}],
			"destination":{"type":"webhook","url":"https://hooks.example.com/x"},
			"transform":"{kind: .type, amount: .data.amount}"}`, 201, &sub)
		if sub.Transform == nil || *sub.Transform != "{kind: .type, amount: .data.amount}" {
			t.Fatalf("created with transform %v", sub.Transform)
		}
		base := "/v1/subscriptions/" + sub.ID
		acme.json("GET", base, "", 200, &sub)
		if sub.Transform == nil || *sub.Transform != "{kind: .type, amount: .data.amount}" {
			t.Fatalf("read transform %v", sub.Transform)
		}
		for _, bad := range []string{`{"transform":"{a: }"}`, `{"transform":"input"}`, `{"transform":"nope(1)"}`,
			`{"transform":"` + strings.Repeat(" ", 4097) + `."}`, `{"transform":12}`} {
			status, _, b := acme.do("PATCH", base, bad)
			wantError(t, status, b, 400, "invalid")
			if !strings.Contains(string(b), `"transform: `) {
				t.Fatalf("PATCH %s: %s does not name transform", bad, b)
			}
		}
		acme.json("PATCH", base, `{"name":"renamed"}`, 200, &sub)
		if sub.Transform == nil || *sub.Transform != "{kind: .type, amount: .data.amount}" {
			t.Fatalf("a PATCH without transform changed it: %v", sub.Transform)
		}
		acme.json("PATCH", base, `{"transform":".data.amount"}`, 200, &sub)
		if sub.Transform == nil || *sub.Transform != ".data.amount" {
			t.Fatalf("patched transform %v", sub.Transform)
		}
		acme.json("PATCH", base, `{"transform":null}`, 200, &sub)
		if sub.Transform != nil {
			t.Fatalf("cleared transform %v", *sub.Transform)
		}
		var raw map[string]json.RawMessage
		acme.json("GET", base, "", 200, &raw)
		if string(raw["transform"]) != "null" {
			t.Fatalf("transform shows as %s, want null", raw["transform"])
		}
		// Creating with a bad program creates nothing.
		status, _, b := acme.do("POST", "/v1/subscriptions", `{"name":"t","event_types":[{"type":"transaction.posted","schema_major":1}],
			"destination":{"type":"webhook","url":"https://hooks.example.com/x"},"transform":"[inputs]"}`)
		wantError(t, status, b, 400, "invalid")
	})
}

// transform-preview shows the body and content type the destination
// would get, with the saved program or one given to try; a failing run is
// 422 with the reason.
func TestTransform_Preview(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		var sub struct{ ID string }
		acme.json("POST", "/v1/subscriptions", `{"name":"t","event_types":[{"type":"transaction.posted","schema_major":1}],
			"destination":{"type":"webhook","url":"https://hooks.example.com/x"},
			"transform":"{kind: .type, amount: .data.amount, tenant: .tenant_id, id}"}`, 201, &sub)
		url := "/v1/subscriptions/" + sub.ID + "/transform-preview"
		var res struct {
			Transform   *string `json:"transform"`
			ContentType string  `json:"content_type"`
			Body        string  `json:"body"`
		}
		acme.json("POST", url, `{"id":"ev_1","type":"studio.lerian.transaction.posted","data":{"amount":"10.00"}}`, 200, &res)
		if res.ContentType != "application/json" || res.Body != `{"amount":"10.00","id":"ev_1","kind":"studio.lerian.transaction.posted","tenant":"acme"}` {
			t.Fatalf("preview %+v", res)
		}
		// CloudEvent-ish, with a program to try (not saved), whose output
		// is text.
		acme.json("POST", url, `{"specversion":"1.0","id":"ev_2","type":"x.y","source":"s","tenantid":"acme",
			"datacontenttype":"application/xml","data":"<a>1</a>","transform":"\"got \\(.data) from \\(.source)\""}`, 200, &res)
		if res.ContentType != "text/plain" || res.Body != "got <a>1</a> from s" || res.Transform == nil {
			t.Fatalf("preview %+v", res)
		}
		var got struct {
			Transform *string `json:"transform"`
		}
		acme.json("GET", "/v1/subscriptions/"+sub.ID, "", 200, &got)
		if got.Transform == nil || !strings.HasPrefix(*got.Transform, "{kind:") {
			t.Fatalf("trying a program changed the saved one: %v", got.Transform)
		}
		// Without a program: the data unchanged.
		acme.json("POST", url, `{"data":{"a":1},"transform":null}`, 200, &res)
		if res.Transform != nil || res.ContentType != "application/json" || res.Body != `{"a":1}` {
			t.Fatalf("preview without a program %+v", res)
		}
		for body, want := range map[string]string{
			`{"data":{},"transform":"empty"}`:       "no output",
			`{"data":{},"transform":"1, 2"}`:        "more than one output",
			`{"data":{},"transform":"def f: f; f"}`: "50ms time limit",
			// Over 1 MiB from the event, not from a computation that a
			// loaded machine (-race) may not finish within 50 ms.
			`{"data":"` + strings.Repeat("x", 400_000) + `","transform":"[.data, .data, .data]"}`: "1 MiB",
			`{"data":{},"transform":"error(\"boom\")"}`:                                           "boom",
			`{"data":{},"transform":"\"no\" | halt_error"}`:                                       "halt_error: no",
		} {
			status, _, b := acme.do("POST", url, body)
			for try := 0; try < 5 && want != "50ms time limit" && strings.Contains(string(b), "time limit"); try++ {
				status, _, b = acme.do("POST", url, body) // a loaded machine stalled past 50 ms: again
			}
			wantError(t, status, b, http.StatusUnprocessableEntity, "unprocessable")
			if !strings.Contains(string(b), want) {
				t.Fatalf("%s: %s, want it to say %q", body, b, want)
			}
		}
		status, _, b := acme.do("POST", url, `{"data":{},"transform":"{a: }"}`)
		wantError(t, status, b, 400, "invalid")
		status, _, b = acme.do("POST", url, `{"data":{},"nope":1}`)
		wantError(t, status, b, 400, "invalid")
		status, _, b = globex.do("POST", url, `{"data":{}}`)
		wantError(t, status, b, 404, "not_found")
	})
}

// The test event goes through the subscription's transform, and its
// signature covers the transformed body.
func TestTransform_TestEventIsTransformed(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		rc := newReceiver(t)
		id, secret := acme.subscription(rc.URL)
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"transform":"{wrapped: .data, kind: .type}"}`, 200, nil)
		var res struct {
			Error *string `json:"error"`
		}
		acme.json("POST", "/v1/subscriptions/"+id+"/test", `{"data":{"amount":"1.00"}}`, 200, &res)
		req, body := rc.last()
		if res.Error != nil || string(body) != `{"kind":"`+req.Header.Get("ce-type")+`","wrapped":{"amount":"1.00"}}` || req.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("answer %+v, received %s (%s)", res, body, req.Header.Get("Content-Type"))
		}
		verifySignature(t, secret, req, body)
		// A program that fails fails the test: nothing is sent.
		n := rc.count()
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"transform":"empty"}`, 200, nil)
		acme.json("POST", "/v1/subscriptions/"+id+"/test", "", 200, &res)
		if res.Error == nil || !strings.Contains(*res.Error, "transform: produced no output") || rc.count() != n {
			t.Fatalf("answer %+v, %d requests", res, rc.count()-n)
		}
	})
}

// verifySignature checks a request as a receiver would, with the Standard
// Webhooks algorithm written out: HMAC-SHA256 keyed by the base64 after
// whsec_, over "<webhook-id>.<webhook-timestamp>.<body>".
func verifySignature(t *testing.T, secret string, req *http.Request, body []byte) {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(req.Header.Get("webhook-id") + "." + req.Header.Get("webhook-timestamp") + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	for _, sig := range strings.Fields(req.Header.Get("webhook-signature")) {
		if hmac.Equal([]byte(sig), []byte(want)) {
			return
		}
	}
	t.Fatalf("webhook-signature %q does not verify over %s", req.Header.Get("webhook-signature"), body)
}

// A program past its memory or its time in transform-preview, tried or
// saved, is 422 naming transform_limit, and the hub answers the next
// request as before (docs/filters-and-transforms.md). The programs run
// in worker processes; the store plays no part, so one driver does.
func TestTransform_PreviewPastMemoryOrTimeIs422TransformLimit(t *testing.T) {
	h := newHubAPI(t, testkit.Drivers[1], apiOptions{allowPrivate: true})
	acme := h.tenant("acme")
	var sub struct{ ID string }
	acme.json("POST", "/v1/subscriptions", `{"name":"t","event_types":[{"type":"transaction.posted","schema_major":1}],
		"destination":{"type":"webhook","url":"https://hooks.example.com/x"}}`, 201, &sub)
	base := "/v1/subscriptions/" + sub.ID
	for _, src := range testkit.HostileTransforms {
		program, _ := json.Marshal(src)
		tried := `{"id":"ev_1","type":"studio.lerian.transaction.posted","data":{"a":1},"transform":` + string(program) + `}`
		status, _, b := acme.do("POST", base+"/transform-preview", tried)
		wantError(t, status, b, http.StatusUnprocessableEntity, "unprocessable")
		if !strings.Contains(string(b), "transform_limit") {
			t.Fatalf("%s tried: %s, want transform_limit", src, b)
		}
		// Saved, then previewed as the subscription's own.
		acme.json("PATCH", base, `{"transform":`+string(program)+`}`, 200, nil)
		status, _, b = acme.do("POST", base+"/transform-preview", `{"id":"ev_1","type":"studio.lerian.transaction.posted","data":{"a":1}}`)
		wantError(t, status, b, http.StatusUnprocessableEntity, "unprocessable")
		if !strings.Contains(string(b), "transform_limit") {
			t.Fatalf("%s saved: %s, want transform_limit", src, b)
		}
		var res struct{ Body string }
		acme.json("POST", base+"/transform-preview", `{"data":{"a":1},"transform":".data.a"}`, 200, &res)
		if res.Body != "1" {
			t.Fatalf("after %s: preview answered %+v", src, res)
		}
	}
}
