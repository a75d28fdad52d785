// Package migrate loads a driver's embedded, numbered SQL migrations,
// checks that the files and the database's history make sense, and applies
// what is pending through the driver. Both drivers number the same change
// the same: version N is one step of the schema, whatever the dialect.
package migrate

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered SQL file, NNN_name.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads every *.sql file in dir of fsys. Versions must run 1, 2, 3, ...
// with no gap and no duplicate: a gap means a file went missing.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var ms []Migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migrations: %s: name must be NNN_name.sql", e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		ms = append(ms, Migration{Version: v, Name: name, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations: expected version %d, found %d (%s): versions must run 1..N without gaps or duplicates", i+1, m.Version, m.Name)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("migrations: none found in %s", dir)
	}
	return ms, nil
}

// Pending returns the migrations not yet applied. applied is the database's
// history; it must be exactly 1..k for some k <= len(all), or the database was
// changed by something else or by a newer binary, and nothing is applied.
func Pending(all []Migration, applied []int) ([]Migration, error) {
	sort.Ints(applied)
	for i, v := range applied {
		if v != i+1 {
			return nil, fmt.Errorf("database schema history is %v: expected 1..%d without gaps", applied, len(applied))
		}
	}
	if len(applied) > len(all) {
		return nil, fmt.Errorf("database schema is at version %d but this binary knows only %d: run a newer streaming-hub", len(applied), len(all))
	}
	return all[len(applied):], nil
}

// Current reports an error unless the database is at exactly the newest
// version: what a process that does not migrate checks before it starts.
func Current(all []Migration, applied []int) error {
	pending, err := Pending(all, applied)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return fmt.Errorf("database schema is at version %d, this binary needs %d: run `streaming-hub migrate`", len(applied), len(all))
	}
	return nil
}

// Apply runs, in order, the migrations of all that applied (the database's
// history) lacks, each through apply, which executes its SQL and records
// it in the history, in the driver's transaction. The first failure stops
// it, named after its migration.
func Apply(all []Migration, applied []int, apply func(Migration) error) error {
	pending, err := Pending(all, applied)
	if err != nil {
		return err
	}
	for _, m := range pending {
		if err := apply(m); err != nil {
			return fmt.Errorf("%03d_%s: %w", m.Version, m.Name, err)
		}
	}
	return nil
}
