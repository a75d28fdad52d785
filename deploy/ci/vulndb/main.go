// Command vulndb turns the OSV entries of the golang.org/x/vulndb module
// (its data/osv/GO-*.json) into the database layout that govulncheck reads
// with -db file:///DIR:
//
//	DIR/index/db.json       {"modified": ...}
//	DIR/index/modules.json  [{"path": ..., "vulns": [{"id": ..., "modified": ...}]}]
//	DIR/index/vulns.json    [{"id": ..., "modified": ..., "aliases": [...]}]
//	DIR/ID/GO-YYYY-NNNN.json the entries, as they are
//
// It is the layout the vulndb module's own cmd/indexdb writes, built with
// the standard library alone: indexdb links the vulndb service (gRPC, cloud
// clients, go-git), minutes of compiling on a CI machine, where this takes a
// second. deploy/ci/vulncheck.sh runs it:
//
//	go run ./deploy/ci/vulndb -osv "$VULNDB/data/osv" -out DIR -modified 2026-11-05T23:49:57Z
//
// The entries of the module carry a zero "modified" (the public database
// sets it when it publishes); -modified, the time of the pinned module
// version, stands in for it so that govulncheck reports the data's age.
// The modules index leaves out "fixed", which is optional: govulncheck then
// reads every entry of a module it finds and checks the version against the
// entry's ranges itself.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	osvDir := flag.String("osv", "", "folder of OSV entries (the vulndb module's data/osv)")
	out := flag.String("out", "", "folder to write the database to (created when absent)")
	modified := flag.String("modified", "", "RFC 3339 time for entries whose modified time is zero")
	flag.Parse()
	if *osvDir == "" || *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: vulndb -osv DIR -out DIR [-modified TIME]")
		os.Exit(2)
	}
	var at time.Time
	if *modified != "" {
		var err error
		if at, err = time.Parse(time.RFC3339, *modified); err != nil {
			fmt.Fprintln(os.Stderr, "vulndb: -modified:", err)
			os.Exit(2)
		}
	}
	n, err := build(*osvDir, *out, at)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulndb:", err)
		os.Exit(1)
	}
	fmt.Printf("vulndb: %d entries from %s written to %s\n", n, *osvDir, *out)
}

// entry holds the fields of an OSV entry that the indexes need.
type entry struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases"`
	Affected []struct {
		Package struct {
			Name string `json:"name"`
		} `json:"package"`
	} `json:"affected"`
}

type dbMeta struct {
	Modified time.Time `json:"modified"`
}

type moduleVuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
}

type module struct {
	Path  string       `json:"path"`
	Vulns []moduleVuln `json:"vulns"`
}

type vuln struct {
	ID       string    `json:"id"`
	Modified time.Time `json:"modified"`
	Aliases  []string  `json:"aliases,omitempty"`
}

// build reads every *.json in osvDir and writes the database to out. It
// returns how many entries it wrote. It fails rather than write a database
// that would pass everything: no entries, or none for the standard library.
func build(osvDir, out string, modified time.Time) (int, error) {
	files, err := filepath.Glob(filepath.Join(osvDir, "*.json"))
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Join(out, "ID"), 0o755); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Join(out, "index"), 0o755); err != nil {
		return 0, err
	}
	var db dbMeta
	modules := map[string]*module{}
	var vulns []vuln
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			return 0, err
		}
		var e entry
		if err := json.Unmarshal(b, &e); err != nil {
			return 0, fmt.Errorf("%s: %v", file, err)
		}
		if e.ID == "" || filepath.Base(file) != e.ID+".json" {
			return 0, fmt.Errorf("%s: the entry's id is %q: the file must be named <id>.json", file, e.ID)
		}
		if e.Modified.IsZero() {
			e.Modified = modified
		}
		if e.Modified.After(db.Modified) {
			db.Modified = e.Modified
		}
		vulns = append(vulns, vuln{ID: e.ID, Modified: e.Modified, Aliases: e.Aliases})
		seen := map[string]bool{}
		for _, a := range e.Affected {
			path := a.Package.Name
			if path == "" {
				return 0, fmt.Errorf("%s: an affected package has no name", file)
			}
			if seen[path] {
				continue
			}
			seen[path] = true
			m := modules[path]
			if m == nil {
				m = &module{Path: path}
				modules[path] = m
			}
			m.Vulns = append(m.Vulns, moduleVuln{ID: e.ID, Modified: e.Modified})
		}
		if err := os.WriteFile(filepath.Join(out, "ID", e.ID+".json"), b, 0o644); err != nil {
			return 0, err
		}
	}
	if len(vulns) == 0 {
		return 0, fmt.Errorf("%s holds no OSV entry (*.json)", osvDir)
	}
	if modules["stdlib"] == nil {
		return 0, errors.New("no entry for the standard library (module \"stdlib\"): is this the vulndb module's data/osv?")
	}
	index := make([]*module, 0, len(modules))
	for _, m := range modules {
		slices.SortFunc(m.Vulns, func(a, b moduleVuln) int { return strings.Compare(a.ID, b.ID) })
		index = append(index, m)
	}
	slices.SortFunc(index, func(a, b *module) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(vulns, func(a, b vuln) int { return strings.Compare(a.ID, b.ID) })
	for name, v := range map[string]any{"db.json": db, "modules.json": index, "vulns.json": vulns} {
		b, err := json.Marshal(v)
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(out, "index", name), b, 0o644); err != nil {
			return 0, err
		}
	}
	return len(vulns), nil
}
