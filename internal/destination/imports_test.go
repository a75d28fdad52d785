package destination

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/lerianstudio/streaming-hub/internal/"

// imports are the internal packages the non-test files of dir import.
func imports(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, module) {
				out[strings.TrimPrefix(p, module)] = true
			}
		}
	}
	return out
}

// The driver shape's rules
// (docs/brokers.md): this package
// imports no driver, no driver imports another, and drivers are given values,
// not the hub's configuration.
func TestImports_DriversStandAlone(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var drivers []string
	for _, e := range entries {
		if e.IsDir() {
			drivers = append(drivers, e.Name())
		}
	}
	if len(drivers) < 4 {
		t.Fatalf("drivers = %v: webhook, rabbitmq, kafka and nats expected", drivers)
	}
	for p := range imports(t, ".") {
		if strings.HasPrefix(p, "destination/") {
			t.Errorf("internal/destination imports the driver %s", p)
		}
	}
	for _, d := range drivers {
		for p := range imports(t, d) {
			if strings.HasPrefix(p, "destination/") || p == "config" {
				t.Errorf("the %s driver imports internal/%s", d, p)
			}
		}
	}
}
