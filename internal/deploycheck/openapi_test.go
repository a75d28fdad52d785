package deploycheck_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// TestOpenAPI_RealAnswersHaveEveryRequiredField asks a busy dev hub for each
// kind of resource and checks each answer against the document: every
// field the schema requires is there, and null only where the schema allows
// it. A client generated from the document may then trust both.
func TestOpenAPI_RealAnswersHaveEveryRequiredField(t *testing.T) {
	raw, err := os.ReadFile("../api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	h, sub := startBusyHub(t)
	var jobs struct{ Data []struct{ ID string } }
	testkit.WaitFor(t, "the delivery to be listed", func() bool {
		h.Do("GET", "/v1/subscriptions/"+sub+"/deliveries", "default", "", &jobs)
		return len(jobs.Data) == 1
	})
	var rejections struct{ Data []struct{ ID int64 } }
	testkit.WaitFor(t, "the bad record to be kept", func() bool {
		h.Do("GET", "/v1/admin/rejections", "", "", &rejections)
		return len(rejections.Data) == 1
	})

	for _, c := range []struct{ method, path, tenant, body string }{
		{"GET", "/healthz", "", ""},
		{"GET", "/readyz", "", ""},
		{"GET", "/v1/admin/rejections", "", ""},
		{"GET", "/v1/tenants", "", ""},
		{"GET", "/v1/tenants/default", "", ""},
		{"POST", "/v1/tenants/default/keys", "", "{}"},
		{"GET", "/v1/subscriptions", "default", ""},
		{"GET", "/v1/subscriptions/" + sub, "default", ""},
		{"GET", "/v1/subscriptions/" + sub + "/deliveries", "default", ""},
		{"GET", "/v1/deliveries/" + jobs.Data[0].ID, "default", ""},
		{"POST", "/v1/deliveries/" + jobs.Data[0].ID + "/replay", "default", ""},
		{"POST", "/v1/subscriptions/" + sub + "/replay", "default", `{"status":"succeeded"}`},
		{"POST", "/v1/subscriptions/" + sub + "/rotate-secret", "default", `{"overlap":"1h"}`},
		{"GET", "/v1/events?limit=5", "default", ""},
		{"GET", "/v1/subscriptions/sub_nope", "default", ""},
		{"POST", fmt.Sprintf("/v1/admin/rejections/%d/replay", rejections.Data[0].ID), "", ""},
	} {
		status, answer := call(t, h.URL(), h.Config.AdminToken, c.method, c.path, c.tenant, c.body)
		schema := responseSchema(t, doc, c.method, c.path, status)
		if schema == nil {
			t.Errorf("%s %s answered %d, which the document does not describe", c.method, c.path, status)
			continue
		}
		for _, p := range conform(doc, schema, answer, "$") {
			t.Errorf("%s %s (%d): %s", c.method, c.path, status, p)
		}
	}
}

func call(t *testing.T, base, token, method, path, tenant, body string) (int, any) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if tenant != "" {
		req.Header.Set("X-Tenant-Id", tenant)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s %s: not JSON: %s", method, path, b)
	}
	return resp.StatusCode, v
}

// responseSchema finds the documented JSON schema of an answer: the path
// template matching path, the method, the status.
func responseSchema(t *testing.T, doc map[string]any, method, path string, status int) any {
	path, _, _ = strings.Cut(path, "?")
	for tmpl, item := range doc["paths"].(map[string]any) {
		if !matches(tmpl, path) {
			continue
		}
		op, ok := item.(map[string]any)[strings.ToLower(method)].(map[string]any)
		if !ok {
			continue
		}
		resp, ok := op["responses"].(map[string]any)[fmt.Sprint(status)]
		if !ok {
			return nil
		}
		r := resolve(doc, resp).(map[string]any)
		content, _ := r["content"].(map[string]any)
		js, _ := content["application/json"].(map[string]any)
		return js["schema"]
	}
	t.Fatalf("%s %s: no such path in the document", method, path)
	return nil
}

func matches(tmpl, path string) bool {
	a, b := strings.Split(tmpl, "/"), strings.Split(path, "/")
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && !strings.HasPrefix(a[i], "{") {
			return false
		}
	}
	return true
}

func resolve(doc map[string]any, n any) any {
	for {
		m, ok := n.(map[string]any)
		if !ok {
			return n
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return n
		}
		var cur any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			cur = cur.(map[string]any)[part]
		}
		n = cur
	}
}

// conform lists where v breaks schema: a required field missing, or null
// where the schema does not allow null.
func conform(doc map[string]any, schema, v any, at string) []string {
	s, ok := resolve(doc, schema).(map[string]any)
	if !ok {
		return nil
	}
	if branches, ok := s["oneOf"].([]any); ok {
		var best []string
		for i, b := range branches {
			p := conform(doc, b, v, at)
			if len(p) == 0 {
				return nil
			}
			if i == 0 || len(p) < len(best) {
				best = p
			}
		}
		return best
	}
	var out []string
	if all, ok := s["allOf"].([]any); ok {
		for _, b := range all {
			out = append(out, conform(doc, b, v, at)...)
		}
	}
	if v == nil {
		if allowsNull(s) || s["type"] == nil && s["allOf"] == nil {
			return out
		}
		return append(out, at+": null, but the schema does not allow null")
	}
	switch v := v.(type) {
	case map[string]any:
		for _, name := range asStrings(s["required"]) {
			if _, ok := v[name]; !ok {
				out = append(out, fmt.Sprintf("%s: required field %q is missing", at, name))
			}
		}
		props, _ := s["properties"].(map[string]any)
		for name, x := range v {
			if ps, ok := props[name]; ok {
				out = append(out, conform(doc, ps, x, at+"."+name)...)
			}
		}
	case []any:
		for i, x := range v {
			out = append(out, conform(doc, s["items"], x, fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	return out
}

func allowsNull(s map[string]any) bool {
	switch t := s["type"].(type) {
	case string:
		return t == "null"
	case []any:
		return slices.Contains(t, any("null"))
	}
	return false
}

func asStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		out = append(out, x.(string))
	}
	return out
}
