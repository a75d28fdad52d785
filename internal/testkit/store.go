package testkit

import (
	"context"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/store/sqlite"
)

// OpenPostgres opens a migrated store on a fresh schema (skipping the test
// when PostgreSQL is not configured).
func OpenPostgres(t testing.TB, opts store.Options) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), PostgresPoolURL(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// OpenSQLite opens a migrated store on a new file in the test's temp dir.
func OpenSQLite(t testing.TB, opts store.Options) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), SQLitePath(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}

// Driver names a store driver and opens fresh stores of it.
type Driver struct {
	Name string
	Open func(t testing.TB, opts store.Options) store.Store
}

// Drivers are every store driver; tests that involve a store run on each.
var Drivers = []Driver{
	{"postgres", func(t testing.TB, o store.Options) store.Store { return OpenPostgres(t, o) }},
	{"sqlite", func(t testing.TB, o store.Options) store.Store { return OpenSQLite(t, o) }},
}

// EachDriver runs fn as a subtest per driver.
func EachDriver(t *testing.T, fn func(t *testing.T, d Driver)) {
	for _, d := range Drivers {
		t.Run(d.Name, func(t *testing.T) { fn(t, d) })
	}
}

// OpenTwice opens two handles on one fresh, migrated database of the named
// driver: two replicas, as far as the database can tell.
func OpenTwice(t testing.TB, driver string, opts store.Options) (store.Store, store.Store) {
	t.Helper()
	var open func() (store.Store, error)
	switch driver {
	case "postgres":
		url := PostgresPoolURL(t)
		open = func() (store.Store, error) { return postgres.Open(context.Background(), url, opts) }
	case "sqlite":
		path := SQLitePath(t)
		open = func() (store.Store, error) { return sqlite.Open(context.Background(), path, opts) }
	default:
		t.Fatalf("unknown driver %q", driver)
	}
	var out [2]store.Store
	for i := range out {
		s, err := open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		out[i] = s
	}
	return out[0], out[1]
}
