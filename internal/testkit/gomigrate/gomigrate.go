// Package gomigrate runs golang-migrate's library, with its postgres driver
// (lib/pq, as its stock image's CLI does), over the hub's migrations in
// tests: only tests import it, so the binary carries none of it.
package gomigrate

import (
	"errors"
	"io/fs"
	"net/url"
	"strings"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/postgres" // postgres:// as the CLI opens it
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// New opens golang-migrate on the migrations in dir of fsys (the folder
// the chart's Job copies to /migrations) and the database at dsn, as
// `migrate -path=/migrations -database=dsn` does. pgx's pool settings in
// dsn are left out: lib/pq would send them to the server as parameters.
func New(t testing.TB, fsys fs.FS, dir, dsn string) *migrate.Migrate {
	t.Helper()
	src, err := iofs.New(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, URL(t, dsn))
	if err != nil {
		t.Fatalf("golang-migrate: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// URL is dsn without pgx's pool settings (pool_*).
func URL(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// IsNoChange reports golang-migrate's "nothing to do".
func IsNoChange(err error) bool { return errors.Is(err, migrate.ErrNoChange) }
