// Package migrate loads a driver's embedded, numbered SQL migrations in
// golang-migrate's layout, reads and writes the schema's version in
// golang-migrate's schema_migrations table, and applies what is pending
// through the driver. Both drivers number the same change the same:
// version N is one step of the schema, whatever the dialect.
//
// The layout and the table are golang-migrate's so that its stock image
// (`migrate -path=/migrations -database=... up`, which Lerian's chart runs
// as a Job) and the hub's own runner agree on a database in either order
// (docs/deploy.md, "Migrations").
package migrate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered step, NNN_name.up.sql (a NNN_name.down.sql
// beside it is golang-migrate's to run; the hub never migrates down).
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// File names the step as its file is named.
func (m Migration) File() string { return fmt.Sprintf("%03d_%s.up.sql", m.Version, m.Name) }

// Load reads every NNN_name.up.sql file in dir of fsys. Versions must run
// 1, 2, 3, ... with no gap and no duplicate: a gap means a file went
// missing. A NNN_name.down.sql must have its up file. Any other *.sql file
// is refused, so a migration in the older layout (NNN_name.sql) is named
// rather than silently left out; files that are not SQL are ignored.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var ms []Migration
	downs := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		v, name, direction, err := parseName(e.Name())
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		if direction == "down" {
			downs[v] = name
			continue
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
			return nil, fmt.Errorf("migrations: expected version %d, found %d (%s): versions must run 1..N without gaps or duplicates", i+1, m.Version, m.File())
		}
		if down, ok := downs[m.Version]; ok && down != m.Name {
			return nil, fmt.Errorf("migrations: %03d_%s.down.sql does not match %s: a step's two files have one name", m.Version, down, m.File())
		}
		delete(downs, m.Version)
	}
	for v, name := range downs {
		return nil, fmt.Errorf("migrations: %03d_%s.down.sql has no %03d_%s.up.sql", v, name, v, name)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("migrations: none found in %s", dir)
	}
	return ms, nil
}

// parseName splits NNN_name.up.sql (or .down.sql) into its parts.
func parseName(file string) (version int, name, direction string, err error) {
	base := strings.TrimSuffix(file, ".sql")
	switch {
	case strings.HasSuffix(base, ".up"):
		direction, base = "up", strings.TrimSuffix(base, ".up")
	case strings.HasSuffix(base, ".down"):
		direction, base = "down", strings.TrimSuffix(base, ".down")
	default:
		return 0, "", "", fmt.Errorf("%s: name must be NNN_name.up.sql (golang-migrate's layout; rename it %s.up.sql)", file, base)
	}
	num, name, ok := strings.Cut(base, "_")
	v, err := strconv.Atoi(num)
	if !ok || err != nil || v <= 0 || name == "" || strings.Contains(name, ".") {
		return 0, "", "", fmt.Errorf("%s: name must be NNN_name.up.sql or NNN_name.down.sql", file)
	}
	return v, name, direction, nil
}

// State is a database's schema version as golang-migrate's table holds it:
// the newest version applied (0: none) and whether a run of golang-migrate
// stopped part-way through it.
type State struct {
	Version int
	Dirty   bool
}

// ErrDirty is what Pending and Current answer for a dirty schema.
var ErrDirty = errors.New("database schema is dirty")

// Pending returns the migrations not yet applied to a schema at st. A dirty
// schema, or one newer than this binary, gets none and an error that says
// what to do.
func Pending(all []Migration, st State) ([]Migration, error) {
	if st.Dirty {
		return nil, dirty(all, st.Version)
	}
	if st.Version < 0 {
		return nil, fmt.Errorf("database schema is at version %d: not a version", st.Version)
	}
	if st.Version > len(all) {
		return nil, fmt.Errorf("database schema is at version %d but this binary knows only %d: run a newer streaming-hub", st.Version, len(all))
	}
	return all[st.Version:], nil
}

func dirty(all []Migration, v int) error {
	step := strconv.Itoa(v)
	if v >= 1 && v <= len(all) {
		step = all[v-1].File()
	}
	return fmt.Errorf("%w at version %d: a run of golang-migrate stopped in %s and may have left it half done "+
		"(docs/deploy.md, \"A dirty schema\"); compare the schema with that file, then record the version it is really at: "+
		"`migrate -path=/migrations -database=$STREAMING_HUB_POSTGRES_DSN force %d` if none of it applied (PostgreSQL runs each file in one transaction), "+
		"or `force %d` once you completed it by hand; then migrate again", ErrDirty, v, step, v-1, v)
}

// Current reports an error unless the schema is at exactly the newest
// version: what a process that does not migrate checks before it starts.
func Current(all []Migration, st State) error {
	pending, err := Pending(all, st)
	if err != nil {
		return err
	}
	if len(pending) > 0 {
		return fmt.Errorf("database schema is at version %d, this binary needs version %d (%s): run `streaming-hub migrate` or the chart's migrations Job", st.Version, len(all), all[len(all)-1].File())
	}
	return nil
}

// Apply runs, in order, the migrations a schema at st lacks, each through
// apply, which executes its SQL in the driver's transaction. The first
// failure stops it, named after its migration. It returns the version
// reached (st.Version when nothing was pending).
func Apply(all []Migration, st State, apply func(Migration) error) (int, error) {
	pending, err := Pending(all, st)
	if err != nil {
		return st.Version, err
	}
	v := st.Version
	for _, m := range pending {
		if err := apply(m); err != nil {
			return v, fmt.Errorf("%03d_%s: %w", m.Version, m.Name, err)
		}
		v = m.Version
	}
	return v, nil
}

// Table is the schema's version table, schema_migrations, in one driver's
// SQL, inside the transaction that migrates (or checks).
type Table interface {
	// Columns lists the table's columns; none when it does not exist.
	Columns(ctx context.Context) ([]string, error)
	// History reads every version of the hub's older table (one row a
	// version); State reads golang-migrate's (one row, or none).
	History(ctx context.Context) ([]int, error)
	State(ctx context.Context) ([]State, error)
	// Replace drops what table there is and makes golang-migrate's,
	// holding no row; Set makes it hold st alone.
	Replace(ctx context.Context) error
	Set(ctx context.Context, st State) error
}

// The hub's older table held one row per version applied, with its name
// and time; golang-migrate's holds the newest version and a dirty flag.
var (
	olderColumns = []string{"applied_at", "name", "version"}
	tableColumns = []string{"dirty", "version"}
)

// Read returns the schema's state from t. With carry (a process that
// migrates), a missing table is made and the hub's older table is carried
// over: its versions, which must run 1..k, become golang-migrate's version
// k, and the older table is dropped (its name is golang-migrate's). Without
// carry nothing is written: the older table is an error that says to
// migrate once.
func Read(ctx context.Context, t Table, carry bool) (State, error) {
	cols, err := t.Columns(ctx)
	if err != nil {
		return State{}, fmt.Errorf("schema_migrations: %w", err)
	}
	slices.Sort(cols)
	switch {
	case len(cols) == 0:
		if carry {
			if err := t.Replace(ctx); err != nil {
				return State{}, fmt.Errorf("schema_migrations: %w", err)
			}
		}
		return State{}, nil
	case slices.Equal(cols, olderColumns):
		versions, err := t.History(ctx)
		if err != nil {
			return State{}, fmt.Errorf("schema_migrations: %w", err)
		}
		st, err := fromHistory(versions)
		if err != nil {
			return State{}, err
		}
		if !carry {
			return State{}, fmt.Errorf("database schema is at version %d in streaming-hub's older schema_migrations table: run `streaming-hub migrate` once to carry it over to golang-migrate's (docs/deploy.md, \"Migrations\")", st.Version)
		}
		if err := t.Replace(ctx); err != nil {
			return State{}, fmt.Errorf("schema_migrations: carry over: %w", err)
		}
		if st.Version > 0 {
			if err := t.Set(ctx, st); err != nil {
				return State{}, fmt.Errorf("schema_migrations: carry over: %w", err)
			}
		}
		return st, nil
	case slices.Equal(cols, tableColumns):
		rows, err := t.State(ctx)
		if err != nil {
			return State{}, fmt.Errorf("schema_migrations: %w", err)
		}
		switch len(rows) {
		case 0:
			return State{}, nil
		case 1:
			return rows[0], nil
		}
		return State{}, fmt.Errorf("schema_migrations holds %d rows: golang-migrate's table holds one, the schema's version; delete all but the version the schema is at", len(rows))
	}
	return State{}, fmt.Errorf("schema_migrations has columns %s: neither golang-migrate's (version, dirty) nor streaming-hub's older table; is another application's table in this schema?", strings.Join(cols, ", "))
}

// fromHistory is the version of the hub's older table's history, which
// must be exactly 1..k.
func fromHistory(applied []int) (State, error) {
	sort.Ints(applied)
	for i, v := range applied {
		if v != i+1 {
			return State{}, fmt.Errorf("database schema history is %v: expected 1..%d without gaps", applied, len(applied))
		}
	}
	return State{Version: len(applied)}, nil
}
