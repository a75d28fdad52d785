package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	gmpostgres "github.com/golang-migrate/migrate/v4/database/postgres"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lerianstudio/streaming-hub/internal/store"
	hubmigrate "github.com/lerianstudio/streaming-hub/internal/store/migrate"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
	"github.com/lerianstudio/streaming-hub/internal/testkit/gomigrate"
)

// The migrations folder as the chart's migrations Job copies it in.
var migrationsDir = os.DirFS("migrations")

// latest is the newest version of the folder.
func latest(t *testing.T) int {
	t.Helper()
	ms, err := hubmigrate.Load(migrationsDir, ".")
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}

// openUnmigrated opens the hub's store on url without migrating.
func openUnmigrated(t *testing.T, url string) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// versionRow is what schema_migrations holds, as golang-migrate reads it.
func versionRow(t *testing.T, m *migrate.Migrate) (uint, bool) {
	t.Helper()
	v, dirty, err := m.Version()
	if err != nil {
		t.Fatalf("golang-migrate Version: %v", err)
	}
	return v, dirty
}

// schemaOf describes the tables, columns, indexes and functions of the
// current schema (weekly partitions, which the hub makes at start, left
// out), to compare two schemas migrated by different runners.
func schemaOf(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `
		SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name !~ '_w[0-9]{8}$'
		UNION ALL
		-- PostgreSQL names a partition's indexes itself (…_idx, …_idx1): which
		-- gets which suffix follows the order they were made, not the schema.
		SELECT 'index ' || regexp_replace(indexname, '_idx[0-9]+$', '_idx') || ' ' ||
			regexp_replace(replace(indexdef, current_schema() || '.', ''), '_idx[0-9]+ ON ', '_idx ON ')
			FROM pg_indexes WHERE schemaname = current_schema() AND tablename !~ '_w[0-9]{8}$'
		UNION ALL
		SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = current_schema()::regnamespace AND conrelid::regclass::text !~ '_w[0-9]{8}$'
		UNION ALL
		SELECT 'function ' || proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := collectStrings(rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 50 {
		t.Fatalf("the schema has only %d parts: not migrated?", len(lines))
	}
	// Each part once: a constraint PostgreSQL lists once per partition it
	// reached when the listing ran is the same constraint.
	return strings.Join(slices.Compact(lines), "\n")
}

func collectStrings(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close()
}) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Lerian's chart migrates with golang-migrate's stock image before the
// hub starts: the hub then finds nothing pending (a check passes, a run of
// its own changes nothing), and the schema is the one its own runner makes.
func TestGolangMigrate_UpThenTheHubFindsNothingPending(t *testing.T) {
	ctx := context.Background()
	url := testkit.PostgresPoolURL(t)
	m := gomigrate.New(t, migrationsDir, ".", url)
	if err := m.Up(); err != nil {
		t.Fatalf("golang-migrate up: %v", err)
	}
	if v, dirty := versionRow(t, m); v != uint(latest(t)) || dirty {
		t.Fatalf("golang-migrate left version %d (dirty %v), want %d", v, dirty, latest(t))
	}

	db := openUnmigrated(t, url)
	if err := db.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema after golang-migrate: %v", err)
	}
	before := schemaOf(t, db.Pool())
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("the hub's Migrate after golang-migrate: %v", err)
	}
	if v, dirty := versionRow(t, m); v != uint(latest(t)) || dirty {
		t.Fatalf("after the hub's run the version is %d (dirty %v)", v, dirty)
	}
	if after := schemaOf(t, db.Pool()); after != before {
		t.Fatalf("the hub's Migrate changed a schema golang-migrate had made current")
	}
	if err := m.Up(); !errors.Is(err, migrate.ErrNoChange) {
		t.Fatalf("golang-migrate up again: %v, want ErrNoChange", err)
	}

	// The same schema as the hub's own runner makes.
	own := testkit.OpenPostgres(t, store.Options{})
	if mine, theirs := schemaOf(t, own.Pool()), before; mine != theirs {
		t.Fatalf("golang-migrate and the hub's runner made different schemas:\n%s", diffLines(theirs, mine))
	}
}

func diffLines(a, b string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(s, "\n") {
			m[l] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out []string
	for l := range ma {
		if !mb[l] {
			out = append(out, "golang-migrate only: "+l)
		}
	}
	for l := range mb {
		if !ma[l] {
			out = append(out, "hub only: "+l)
		}
	}
	return strings.Join(out, "\n")
}

// The other order: the hub migrates (serve did, or `streaming-hub
// migrate`); then the chart's Job runs golang-migrate up, which has nothing
// to do. A schema the hub took part of the way, golang-migrate finishes.
func TestGolangMigrate_AfterTheHubUpIsANoChange(t *testing.T) {
	ctx := context.Background()
	url := testkit.PostgresPoolURL(t)
	db := openUnmigrated(t, url)
	if err := db.MigrateTo(ctx, latest(t)-3); err != nil {
		t.Fatal(err)
	}
	m := gomigrate.New(t, migrationsDir, ".", url)
	if v, dirty := versionRow(t, m); v != uint(latest(t)-3) || dirty {
		t.Fatalf("golang-migrate reads version %d (dirty %v) where the hub left %d", v, dirty, latest(t)-3)
	}
	if err := m.Up(); err != nil {
		t.Fatalf("golang-migrate up from the hub's %d: %v", latest(t)-3, err)
	}
	if err := db.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}

	url2 := testkit.PostgresPoolURL(t)
	db2 := openUnmigrated(t, url2)
	if err := db2.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	m2 := gomigrate.New(t, migrationsDir, ".", url2)
	if err := m2.Up(); !errors.Is(err, migrate.ErrNoChange) {
		t.Fatalf("golang-migrate up after the hub: %v, want ErrNoChange", err)
	}
	if v, dirty := versionRow(t, m2); v != uint(latest(t)) || dirty {
		t.Fatalf("version %d (dirty %v), want %d", v, dirty, latest(t))
	}
}

// A database the hub migrated before it kept golang-migrate's table (one
// row per version, with names and times) is carried over by the first run
// of the new runner, once: golang-migrate's table then holds the version,
// and golang-migrate agrees. Before that, a check says to migrate once and
// golang-migrate fails without changing anything.
func TestGolangMigrate_TheHubsOlderTableIsCarriedOverOnce(t *testing.T) {
	ctx := context.Background()
	url := testkit.PostgresPoolURL(t)
	db := openUnmigrated(t, url)
	behind := latest(t) - 1
	if err := db.MigrateTo(ctx, behind); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	// The table the hub kept before, as it kept it.
	pool := db.Pool()
	if _, err := pool.Exec(ctx, `DROP TABLE schema_migrations;
		CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= behind; v++ {
		if _, err := pool.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, v, fmt.Sprint("step", v)); err != nil {
			t.Fatal(err)
		}
	}

	err := db.CheckSchema(ctx)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at version %d in streaming-hub's older schema_migrations table", behind)) ||
		!strings.Contains(err.Error(), "streaming-hub migrate") {
		t.Fatalf("serve --no-migrate's check on the older table: %v", err)
	}
	src := gomigrate.New(t, migrationsDir, ".", url)
	if err := src.Up(); err == nil || !strings.Contains(err.Error(), "dirty") {
		t.Fatalf("golang-migrate on the older table: %v, want its error about the missing dirty column", err)
	}

	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("the hub's Migrate on its older table: %v", err)
	}
	m := gomigrate.New(t, migrationsDir, ".", url)
	if v, dirty := versionRow(t, m); v != uint(latest(t)) || dirty {
		t.Fatalf("after the carry over golang-migrate reads %d (dirty %v), want %d", v, dirty, latest(t))
	}
	var olderTables int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'schema_migrations' AND column_name IN ('name', 'applied_at')`).Scan(&olderTables); err != nil || olderTables != 0 {
		t.Fatalf("the older table's columns are still there (%d, %v)", olderTables, err)
	}
	if err := m.Up(); !errors.Is(err, migrate.ErrNoChange) {
		t.Fatalf("golang-migrate up after the carry over: %v, want ErrNoChange", err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("a second run: %v", err)
	}
	if err := db.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetTenant(ctx, "acme"); err != nil {
		t.Fatalf("the tenant made before the carry over: %v", err)
	}
}

// golang-migrate marks a version dirty while it runs it and leaves the
// mark when the file fails. The hub then neither migrates nor starts, and
// says which file and how to clear the mark; once cleared, both go on.
func TestGolangMigrate_ADirtySchemaIsRefusedClearly(t *testing.T) {
	ctx := context.Background()
	url := testkit.PostgresPoolURL(t)
	m := gomigrate.New(t, migrationsDir, ".", url)
	last := latest(t)
	if err := m.Migrate(uint(last - 1)); err != nil {
		t.Fatal(err)
	}
	ms, err := hubmigrate.Load(migrationsDir, ".")
	if err != nil {
		t.Fatal(err)
	}
	// The last file fails half-way: a statement of it is made to fail by
	// a lock it cannot take in time.
	db := openUnmigrated(t, url)
	failing := gomigrate.New(t, migrationsDir, ".", gomigrate.URL(t, url)+"&x-statement-timeout=1")
	conn, err := db.Pool().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE subscriptions IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	upErr := failing.Up()
	tx.Rollback(ctx)
	conn.Release()
	if upErr == nil {
		t.Fatalf("%s ran while its table was locked", ms[last-1].File())
	}
	if v, dirty := versionRow(t, m); v != uint(last) || !dirty {
		t.Fatalf("golang-migrate left version %d dirty %v, want %d dirty", v, dirty, last)
	}

	for name, f := range map[string]func(context.Context) error{"Migrate": db.Migrate, "CheckSchema": db.CheckSchema} {
		err := f(ctx)
		if !errors.Is(err, hubmigrate.ErrDirty) {
			t.Fatalf("%s on a dirty schema: %v", name, err)
		}
		for _, want := range []string{fmt.Sprintf("dirty at version %d", last), ms[last-1].File(), fmt.Sprintf("force %d", last-1)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q lacks %q", name, err, want)
			}
		}
	}
	if v, dirty := versionRow(t, m); v != uint(last) || !dirty {
		t.Fatalf("the hub changed the dirty mark: %d %v", v, dirty)
	}
	// The way out the error gives: nothing of the file applied (one
	// transaction), so force the version before it and migrate.
	if err := m.Force(last - 1); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("Migrate after force: %v", err)
	}
	if err := db.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
}

// golang-migrate and the hub's runner never migrate one schema at once:
// while golang-migrate (opened as its CLI opens a URL) holds its lock, the
// hub's run waits for it, and goes on when it is released.
func TestGolangMigrate_TheHubWaitsForGolangMigratesLock(t *testing.T) {
	ctx := context.Background()
	url := testkit.PostgresPoolURL(t)
	driver, err := (&gmpostgres.Postgres{}).Open(gomigrate.URL(t, url))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { driver.Close() })
	if err := driver.Lock(); err != nil {
		t.Fatal(err)
	}
	db := openUnmigrated(t, url)
	done := make(chan error, 1)
	go func() { done <- db.Migrate(ctx) }()
	testkit.Eventually(t, testkit.Patience, "the hub's run to wait on an advisory lock", func() bool {
		var waiting int
		err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND pid IN (SELECT pid FROM pg_stat_activity WHERE query LIKE '%pg_advisory_xact_lock%')`).Scan(&waiting)
		return err == nil && waiting > 0
	})
	select {
	case err := <-done:
		t.Fatalf("the hub migrated while golang-migrate held its lock: %v", err)
	default:
	}
	if err := driver.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testkit.Patience):
		t.Fatal("the hub's run did not go on after golang-migrate released its lock")
	}
}

// The lock id is golang-migrate's own computation, for the database as its
// CLI names it (the URL's path) and as a library caller does.
func TestGolangMigrate_LockIDIsGolangMigrates(t *testing.T) {
	for _, c := range []struct{ db, schema string }{{"/hub", "public"}, {"hub", "public"}, {"/sh_x", "t_0a1b2c"}} {
		want, err := database.GenerateAdvisoryLockId(c.db, c.schema, "schema_migrations")
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(postgres.MigrateLockID(c.db, c.schema)); got != want {
			t.Errorf("lock id of %q, %q: %s, golang-migrate's %s", c.db, c.schema, got, want)
		}
	}
}
