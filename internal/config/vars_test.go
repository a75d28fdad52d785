package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestConfigurationDoc fails when docs/configuration.md is not what the
// code generates: run go run ./internal/config/gen > docs/configuration.md.
func TestConfigurationDoc(t *testing.T) {
	got, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := Markdown(); string(got) != want {
		t.Errorf("docs/configuration.md differs from the code's variables: run\n\tgo run ./internal/config/gen > docs/configuration.md")
	}
}

// TestVariablesDocumented: every variable Known reads has a description,
// and the table describes no variable the hub does not read.
func TestVariablesDocumented(t *testing.T) {
	known := map[string]bool{}
	for _, n := range Known() {
		known[n] = true
		if variableDocs[n].text == "" {
			t.Errorf("%s%s: read by the hub, no description in variableDocs", Prefix, n)
		}
	}
	for n := range variableDocs {
		if !known[n] {
			t.Errorf("%s%s: described in variableDocs, not read by the hub", Prefix, n)
		}
	}
}

// TestEveryVariableInCodeIsKnown scans the module's non-test Go files for
// STREAMING_HUB_ names (and config.Prefix+"NAME") and wants each in the
// table: a variable read ad hoc somewhere must be documented too.
func TestEveryVariableInCodeIsKnown(t *testing.T) {
	known := map[string]bool{}
	for _, n := range Known() {
		known[n] = true
	}
	literal := regexp.MustCompile(`STREAMING_HUB_([A-Z0-9_]*[A-Z0-9])\b`)
	prefixed := regexp.MustCompile(`Prefix\s*\+\s*"([A-Z0-9_]*[A-Z0-9])"`)
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, re := range []*regexp.Regexp{literal, prefixed} {
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				if !known[m[1]] {
					t.Errorf("%s: %s%s is not a known variable (add it to variableDocs, and to otherNames if read outside Load)", path, Prefix, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
