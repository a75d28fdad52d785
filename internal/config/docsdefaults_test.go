package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// documentedDefault finds a variable's default where a docs page states
// it in passing: "`STREAMING_HUB_X` (15s)", "`STREAMING_HUB_X` (default
// `12h`", "`STREAMING_HUB_X`, default `v`".
var documentedDefault = regexp.MustCompile("`STREAMING_HUB_([A-Z0-9_]+)`(?: \\(default `([^`]+)`|, default `([^`]+)`| \\(([0-9][0-9a-z.]*)\\))")

// TestDocsPages_StateTheCodesDefaults fails when a docs page (or the
// README) states a variable's default other than the code's (serve's or
// dev's): one truth per fact, the configuration page generated from the
// code and every other page agreeing with it.
func TestDocsPages_StateTheCodesDefaults(t *testing.T) {
	defaults := map[string][]string{}
	for _, v := range Variables() {
		defaults[v.Name] = []string{v.Default, v.DevDefault}
	}
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "..", "README.md"))
	checked := 0
	for _, page := range pages {
		if filepath.Base(page) == "configuration.md" {
			continue // generated from the code: TestConfigurationDoc
		}
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range documentedDefault.FindAllStringSubmatch(string(raw), -1) {
			name, said := m[1], m[2]+m[3]+m[4]
			code, ok := defaults[name]
			if !ok || strings.HasPrefix(name, "TEST_") {
				continue // the tests' and the client's variables have their defaults where they are read
			}
			checked++
			if said != code[0] && said != code[1] && strings.Trim(code[0], "`") != said {
				t.Errorf("%s says STREAMING_HUB_%s defaults to %q; the code's default is %q (dev %q)", filepath.Base(page), name, said, code[0], code[1])
			}
		}
	}
	if checked == 0 {
		t.Fatal("no documented default found: the pattern no longer matches the pages")
	}
}
