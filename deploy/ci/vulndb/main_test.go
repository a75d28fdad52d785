package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Entries shaped like the vulndb module's data/osv: a zero modified time,
// the module path in affected[].package.name, once per package.
var entries = map[string]string{
	"GO-2026-0001.json": `{"schema_version":"1.3.1","id":"GO-2026-0001","modified":"0001-01-01T00:00:00Z",
		"aliases":["CVE-2026-1"],"affected":[{"package":{"name":"stdlib","ecosystem":"Go"},
		"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.27.2"}]}],
		"ecosystem_specific":{"imports":[{"path":"net/http","symbols":["Server.Serve"]}]}}]}`,
	"GO-2026-0002.json": `{"schema_version":"1.3.1","id":"GO-2026-0002","modified":"0001-01-01T00:00:00Z",
		"affected":[{"package":{"name":"golang.org/x/net","ecosystem":"Go"}},
		{"package":{"name":"golang.org/x/net","ecosystem":"Go"}},
		{"package":{"name":"stdlib","ecosystem":"Go"}}]}`,
	"GO-2025-0003.json": `{"schema_version":"1.3.1","id":"GO-2025-0003","modified":"2027-01-02T03:04:05Z",
		"affected":[{"package":{"name":"golang.org/x/net","ecosystem":"Go"}}]}`,
	"README.md": "not an entry",
}

func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestBuild(t *testing.T) {
	in := write(t, entries)
	out := filepath.Join(t.TempDir(), "db")
	at := time.Date(2026, 11, 5, 23, 49, 57, 0, time.UTC)
	n, err := build(in, out, at)
	if err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("build wrote %d entries, want 3", n)
	}
	for name, want := range map[string]string{
		"index/db.json": `{"modified":"2027-01-02T03:04:05Z"}`,
		"index/modules.json": `[{"path":"golang.org/x/net","vulns":[` +
			`{"id":"GO-2025-0003","modified":"2027-01-02T03:04:05Z"},` +
			`{"id":"GO-2026-0002","modified":"2026-11-05T23:49:57Z"}]},` +
			`{"path":"stdlib","vulns":[` +
			`{"id":"GO-2026-0001","modified":"2026-11-05T23:49:57Z"},` +
			`{"id":"GO-2026-0002","modified":"2026-11-05T23:49:57Z"}]}]`,
		"index/vulns.json": `[{"id":"GO-2025-0003","modified":"2027-01-02T03:04:05Z"},` +
			`{"id":"GO-2026-0001","modified":"2026-11-05T23:49:57Z","aliases":["CVE-2026-1"]},` +
			`{"id":"GO-2026-0002","modified":"2026-11-05T23:49:57Z"}]`,
	} {
		if got := read(t, filepath.Join(out, name)); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	// The entries are copied as they are: govulncheck reads their ranges.
	for name, body := range entries {
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		if got := read(t, filepath.Join(out, "ID", name)); got != body {
			t.Errorf("ID/%s differs from the entry", name)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "ID", "README.md")); err == nil {
		t.Error("a file that is not an entry was copied")
	}
}

func TestBuildRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no entries", map[string]string{"README.md": "x"}, "no OSV entry"},
		{"no standard library", map[string]string{"GO-2025-0003.json": entries["GO-2025-0003.json"]}, "standard library"},
		{"misnamed", map[string]string{"GO-2026-9999.json": entries["GO-2026-0001.json"]}, `id is "GO-2026-0001"`},
		{"not JSON", map[string]string{"GO-2026-0001.json": "{"}, "GO-2026-0001.json"},
		{"no package name", map[string]string{"GO-2026-0001.json": `{"id":"GO-2026-0001","affected":[{"package":{}}]}`}, "no name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := build(write(t, c.files), t.TempDir(), time.Time{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("build: %v, want an error with %q", err, c.want)
			}
		})
	}
}
