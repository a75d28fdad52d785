package api

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAPIDocListsEveryRoute: docs/api.md has a line for every operation of
// openapi.json, so the page cannot fall behind the document it points to.
func TestAPIDocListsEveryRoute(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(spec, &d); err != nil {
		t.Fatal(err)
	}
	for path, ops := range d.Paths {
		for method := range ops {
			switch method {
			case "get", "post", "put", "patch", "delete":
			default:
				continue
			}
			line := "| " + strings.ToUpper(method) + " | `" + path + "` |"
			if !strings.Contains(string(doc), line) {
				t.Errorf("docs/api.md lacks %s %s (a line starting %q)", strings.ToUpper(method), path, line)
			}
		}
	}
}
