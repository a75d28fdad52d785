package migrate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad_OrdersByVersionAndLeavesDownFilesToGolangMigrate(t *testing.T) {
	fsys := fstest.MapFS{
		"m/002_jobs.up.sql":     {Data: []byte("B")},
		"m/001_init.up.sql":     {Data: []byte("A")},
		"m/001_init.down.sql":   {Data: []byte("DROP A")},
		"m/README.md":           {Data: []byte("ignored")},
		"m/003_events.up.sql":   {Data: []byte("C")},
		"m/003_events.down.sql": {Data: []byte("DROP C")},
	}
	ms, err := Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Name+"="+m.SQL)
	}
	if strings.Join(got, ",") != "init=A,jobs=B,events=C" {
		t.Fatalf("got %v", got)
	}
	if ms[2].File() != "003_events.up.sql" {
		t.Fatalf("File() = %q", ms[2].File())
	}
}

func TestLoad_RefusesGapsDuplicatesAndBadNames(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"gap":              {"m/001_a.up.sql": {}, "m/003_c.up.sql": {}},
		"duplicate":        {"m/001_a.up.sql": {}, "m/001_b.up.sql": {}},
		"bad name":         {"m/one_a.up.sql": {}},
		"no name":          {"m/001_.up.sql": {}},
		"empty":            {"m/x.txt": {}},
		"only a down":      {"m/001_a.up.sql": {}, "m/002_b.down.sql": {}},
		"down of another":  {"m/001_a.up.sql": {}, "m/001_b.down.sql": {}},
		"a direction else": {"m/001_a.up.sql": {}, "m/002_b.sideways.sql": {}},
	} {
		if _, err := Load(fsys, "m"); err == nil {
			t.Errorf("%s: Load accepted it", name)
		}
	}
}

// A migration written in the hub's older layout (a branch made before the
// move to golang-migrate's) is refused by name, with the rename to make,
// rather than left out of the folder the chart's Job copies.
func TestLoad_NamesAMigrationInTheOlderLayout(t *testing.T) {
	_, err := Load(fstest.MapFS{"m/001_a.up.sql": {}, "m/002_quarantine.sql": {}}, "m")
	if err == nil || !strings.Contains(err.Error(), "002_quarantine.sql") || !strings.Contains(err.Error(), "002_quarantine.up.sql") {
		t.Fatalf("Load = %v; want it to name 002_quarantine.sql and its new name", err)
	}
}

func TestPending(t *testing.T) {
	all := []Migration{{Version: 1, Name: "a"}, {Version: 2, Name: "b"}, {Version: 3, Name: "c"}}
	p, err := Pending(all, State{Version: 2})
	if err != nil || len(p) != 1 || p[0].Version != 3 {
		t.Fatalf("Pending = %v, %v", p, err)
	}
	if p, err := Pending(all, State{}); err != nil || len(p) != 3 {
		t.Fatalf("Pending on an empty schema = %v, %v", p, err)
	}
	if _, err := Pending(all, State{Version: 4}); err == nil || !strings.Contains(err.Error(), "version 4 but this binary knows only 3") {
		t.Errorf("database newer than binary: %v", err)
	}
	err = Current(all, State{Version: 2})
	if err == nil || !strings.Contains(err.Error(), "at version 2, this binary needs version 3 (003_c.up.sql)") || !strings.Contains(err.Error(), "streaming-hub migrate") {
		t.Errorf("Current on an old schema = %v", err)
	}
	if err := Current(all, State{Version: 3}); err != nil {
		t.Errorf("Current on the newest schema = %v", err)
	}
}

// golang-migrate marks a version dirty while it runs it and leaves the
// mark when the file fails: the schema may be half-way, so nothing runs
// and the error says which file and how to clear the mark.
func TestPending_RefusesADirtySchemaNamingTheFileAndTheWayOut(t *testing.T) {
	all := []Migration{{Version: 1, Name: "a"}, {Version: 2, Name: "b"}, {Version: 3, Name: "c"}}
	for _, f := range []func() error{
		func() error { _, err := Pending(all, State{Version: 2, Dirty: true}); return err },
		func() error { return Current(all, State{Version: 2, Dirty: true}) },
		func() error {
			_, err := Apply(all, State{Version: 2, Dirty: true}, func(Migration) error { t.Error("applied to a dirty schema"); return nil })
			return err
		},
	} {
		err := f()
		if !errors.Is(err, ErrDirty) {
			t.Fatalf("err = %v, want ErrDirty", err)
		}
		for _, want := range []string{"dirty at version 2", "002_b.up.sql", "force 1", "force 2"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q lacks %q", err, want)
			}
		}
	}
}

func TestApply_RunsWhatIsPendingInOrderAndStopsAtTheFirstFailure(t *testing.T) {
	all := []Migration{{Version: 1, Name: "a"}, {Version: 2, Name: "b"}, {Version: 3, Name: "c"}}
	var ran []int
	last, err := Apply(all, State{Version: 1}, func(m Migration) error { ran = append(ran, m.Version); return nil })
	if err != nil || last != 3 {
		t.Fatal(last, err)
	}
	if len(ran) != 2 || ran[0] != 2 || ran[1] != 3 {
		t.Fatalf("applied %v, want [2 3]", ran)
	}
	ran = nil
	_, err = Apply(all, State{}, func(m Migration) error {
		ran = append(ran, m.Version)
		if m.Version == 2 {
			return errors.New("syntax error")
		}
		return nil
	})
	if err == nil || err.Error() != "002_b: syntax error" || len(ran) != 2 {
		t.Fatalf("Apply = %v after %v; want it to stop at 002_b, named", err, ran)
	}
	if last, err := Apply(all, State{Version: 3}, func(Migration) error { t.Error("ran"); return nil }); err != nil || last != 3 {
		t.Fatalf("Apply on a current schema = %d, %v", last, err)
	}
}

// table is a version table in memory: the columns it has and its rows.
type table struct {
	cols     []string
	history  []int
	rows     []State
	replaced bool
}

func (t *table) Columns(context.Context) ([]string, error) { return t.cols, nil }
func (t *table) History(context.Context) ([]int, error)    { return t.history, nil }
func (t *table) State(context.Context) ([]State, error)    { return t.rows, nil }
func (t *table) Set(_ context.Context, st State) error     { t.rows = []State{st}; return nil }
func (t *table) Replace(context.Context) error {
	t.cols, t.history, t.rows, t.replaced = []string{"version", "dirty"}, nil, nil, true
	return nil
}

func TestRead_CarriesTheOlderTableOverOnceAndOnlyWhenMigrating(t *testing.T) {
	ctx := context.Background()
	older := func() *table { return &table{cols: []string{"version", "name", "applied_at"}, history: []int{3, 1, 2}} }

	tb := older()
	if _, err := Read(ctx, tb, false); err == nil || !strings.Contains(err.Error(), "older schema_migrations table") || tb.replaced {
		t.Fatalf("a check on the older table: %v (replaced %v); want an error that says to migrate once, and nothing written", err, tb.replaced)
	}
	st, err := Read(ctx, tb, true)
	if err != nil || st != (State{Version: 3}) {
		t.Fatalf("carry over = %+v, %v", st, err)
	}
	if !tb.replaced || !slices.Equal(tb.rows, []State{{Version: 3}}) {
		t.Fatalf("after the carry over the table holds %+v (replaced %v), want golang-migrate's with version 3", tb.rows, tb.replaced)
	}
	tb.replaced = false
	if st, err := Read(ctx, tb, true); err != nil || st != (State{Version: 3}) || tb.replaced {
		t.Fatalf("second read = %+v, %v (replaced again: %v)", st, err, tb.replaced)
	}

	gap := older()
	gap.history = []int{1, 3}
	if _, err := Read(ctx, gap, true); err == nil || gap.replaced {
		t.Fatalf("an older history with a gap was carried over: %v", err)
	}
}

func TestRead_MakesTheTableOnlyWhenMigrating(t *testing.T) {
	ctx := context.Background()
	tb := &table{}
	if st, err := Read(ctx, tb, false); err != nil || st != (State{}) || tb.replaced {
		t.Fatalf("check on no table = %+v, %v, replaced %v", st, err, tb.replaced)
	}
	if st, err := Read(ctx, tb, true); err != nil || st != (State{}) || !tb.replaced {
		t.Fatalf("migrate on no table = %+v, %v, replaced %v", st, err, tb.replaced)
	}
}

func TestRead_RefusesATableItDoesNotKnow(t *testing.T) {
	ctx := context.Background()
	for name, tb := range map[string]*table{
		"another's":  {cols: []string{"id", "checksum", "version"}},
		"two rows":   {cols: []string{"version", "dirty"}, rows: []State{{Version: 1}, {Version: 2}}},
		"half older": {cols: []string{"version", "name"}},
	} {
		if _, err := Read(ctx, tb, true); err == nil || tb.replaced {
			t.Errorf("%s: Read = %v, replaced %v", name, err, tb.replaced)
		}
	}
}
