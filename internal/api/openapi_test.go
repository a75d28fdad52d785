package api

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
)

// Every registered route is documented and every documented path is
// registered: the document cannot drift from the code.
func TestOpenAPI_DocumentsEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi = %q, want 3.x", doc.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	s, err := New(Deps{Metrics: metrics.New(), Pull: config.Defaults(config.Serve).Pull, AuthFailureLimit: 1, HealthWindow: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, r := range s.routes {
		registered[r.Method+" "+r.Path] = true
	}
	var missing, extra []string
	for k := range registered {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !registered[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("routes not documented: %v\ndocumented but not registered: %v", missing, extra)
	}
}

// The document is one a client generator can use: OpenAPI 3.1 throughout
// (nullable as a "null" type, never the 3.0 keyword), a unique camelCase
// operationId on every operation, servers and the license.
func TestOpenAPI_IsReadyForClientGenerators(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	info, _ := doc["info"].(map[string]any)
	if lic, _ := info["license"].(map[string]any); lic["identifier"] != "Apache-2.0" {
		t.Errorf("info.license = %v, want Apache-2.0", info["license"])
	}
	if servers, _ := doc["servers"].([]any); len(servers) == 0 {
		t.Error("no servers")
	}
	if strings.Contains(string(openapiDoc), `"nullable"`) {
		t.Error(`"nullable" is OpenAPI 3.0; this document is 3.1: use "type": [..., "null"]`)
	}
	seen := map[string]string{}
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			id, _ := op.(map[string]any)["operationId"].(string)
			where := strings.ToUpper(method) + " " + path
			switch {
			case id == "":
				t.Errorf("%s: no operationId", where)
			case id[0] < 'a' || id[0] > 'z' || strings.ContainsAny(id, "_- "):
				t.Errorf("%s: operationId %q is not camelCase", where, id)
			case seen[id] != "":
				t.Errorf("%s: operationId %q also names %s", where, id, seen[id])
			}
			seen[id] = where
		}
	}
	for _, id := range []string{"listSubscriptions", "replayDelivery", "pullEvents", "listRejections"} {
		if seen[id] == "" {
			t.Errorf("no operation %s", id)
		}
	}
}

// The backfill is documented where a client meets it: in the create and
// PATCH bodies, and in the answer with exactly the fields it carries.
func TestOpenAPI_DocumentsBackfill(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Components.Schemas
	for _, body := range []string{"SubscriptionCreate", "SubscriptionUpdate"} {
		if !strings.Contains(string(s[body].Properties["backfill"]), "BackfillRequest") {
			t.Errorf("%s.backfill = %s, want the BackfillRequest", body, s[body].Properties["backfill"])
		}
	}
	if !strings.Contains(string(s["Subscription"].Properties["backfill"]), "#/components/schemas/Backfill\"") ||
		!slices.Contains(s["Subscription"].Required, "backfill") {
		t.Error("Subscription does not show (and require) its backfill")
	}
	var shown []string
	typ := reflect.TypeFor[backfillJSON]()
	for i := range typ.NumField() {
		shown = append(shown, strings.Split(typ.Field(i).Tag.Get("json"), ",")[0])
	}
	documented := slices.Sorted(maps.Keys(s["Backfill"].Properties))
	slices.Sort(shown)
	required := slices.Sorted(slices.Values(s["Backfill"].Required))
	if !slices.Equal(shown, documented) || !slices.Equal(shown, required) {
		t.Errorf("Backfill documents %v (requires %v); the API shows %v", documented, required, shown)
	}
}

// No request body schema, nor any schema it reaches, has a "default"
// keyword: openapi-typescript's default options would make such a field
// required to send. Request bodies state their defaults in descriptions.
func TestOpenAPI_RequestBodiesHaveNoDefaultKeyword(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(openapiDoc, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	seen := map[string]bool{}
	var walk func(where string, v any)
	walk = func(where string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				name := strings.TrimPrefix(ref, "#/components/schemas/")
				if !seen[name] {
					seen[name] = true
					walk(ref, schemas[name])
				}
			}
			if _, ok := v["default"]; ok {
				t.Errorf("%s: a default keyword in a request body (say it in the description)", where)
			}
			for k, c := range v {
				if k != "examples" && k != "example" {
					walk(where+"/"+k, c)
				}
			}
		case []any:
			for _, c := range v {
				walk(where, c)
			}
		}
	}
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		for method, op := range item.(map[string]any) {
			o, _ := op.(map[string]any) // path-level parameters are a list
			if body, ok := o["requestBody"]; ok {
				walk(strings.ToUpper(method)+" "+path, body)
			}
		}
	}
	if !seen["SubscriptionCreate"] {
		t.Error("SubscriptionCreate is reached by no request body")
	}
}
