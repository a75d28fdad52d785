// Package sqlite is the embedded SQLite driver of store.Store, on the pure-Go
// modernc.org/sqlite. It serves one process: writes go through a single
// connection (SQLite has one writer), reads through a pool, in WAL mode.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/migrate"
)

// The migrations, NNN_name.up.sql, in golang-migrate's layout as
// PostgreSQL's are (one convention; the hub's runner applies them).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// DB is a store.Store on one SQLite file.
type DB struct {
	w, r       *sql.DB // writer (one connection) and readers
	path       string
	opts       store.Options
	migrations []migrate.Migration
	wakes      store.Wakes // this process's listeners of new jobs (ListenJobs)
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) the database file at path.
func Open(ctx context.Context, path string, opts store.Options) (_ *DB, err error) {
	defer wrap(&err, "Open")
	migrations, err := migrate.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(ON)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	dsn := "file:" + path + "?" + q.Encode()
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn)
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(4)
	db := &DB{w: w, r: r, path: path, opts: opts.WithDefaults(), migrations: migrations}
	if err := w.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return db, nil
}

func (db *DB) Close() error { return errors.Join(db.r.Close(), db.w.Close()) }

func (db *DB) Ping(ctx context.Context) (err error) {
	defer wrap(&err, "Ping")
	return db.r.PingContext(ctx)
}

// tx runs fn in a write transaction (BEGIN IMMEDIATE, on the one writer).
func (db *DB) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// Migrate applies the pending migrations in one write transaction (SQLite
// has one writer, so two processes never migrate at once), keeping the
// version in golang-migrate's schema_migrations table as PostgreSQL does.
func (db *DB) Migrate(ctx context.Context) (err error) {
	defer wrap(&err, "Migrate")
	return db.tx(ctx, func(tx *sql.Tx) error {
		t := versionTable{tx}
		st, err := migrate.Read(ctx, t, true)
		if err != nil {
			return err
		}
		last, err := migrate.Apply(db.migrations, st, func(m migrate.Migration) error {
			_, err := tx.ExecContext(ctx, m.SQL)
			return err
		})
		if err != nil || last == st.Version {
			return err
		}
		return t.Set(ctx, migrate.State{Version: last})
	})
}

func (db *DB) CheckSchema(ctx context.Context) (err error) {
	defer wrap(&err, "CheckSchema")
	tx, err := db.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := migrate.Read(ctx, versionTable{tx}, false)
	if err != nil {
		return err
	}
	return migrate.Current(db.migrations, st)
}

// versionTable is schema_migrations as golang-migrate's sqlite driver
// makes it (version, dirty; one row).
type versionTable struct{ tx *sql.Tx }

func (t versionTable) Columns(ctx context.Context) ([]string, error) {
	return scanAll[string](ctx, t.tx, `SELECT name FROM pragma_table_info('schema_migrations')`)
}

func (t versionTable) History(ctx context.Context) ([]int, error) {
	return scanAll[int](ctx, t.tx, `SELECT version FROM schema_migrations ORDER BY version`)
}

func (t versionTable) State(ctx context.Context) ([]migrate.State, error) {
	rows, err := t.tx.QueryContext(ctx, `SELECT version, dirty FROM schema_migrations`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []migrate.State
	for rows.Next() {
		var st migrate.State
		if err := rows.Scan(&st.Version, &st.Dirty); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

func (t versionTable) Replace(ctx context.Context) error {
	_, err := t.tx.ExecContext(ctx, `DROP TABLE IF EXISTS schema_migrations;
		CREATE TABLE schema_migrations (version bigint NOT NULL PRIMARY KEY, dirty boolean NOT NULL)`)
	return err
}

func (t versionTable) Set(ctx context.Context, st migrate.State) error {
	if _, err := t.tx.ExecContext(ctx, `DELETE FROM schema_migrations`); err != nil {
		return err
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, dirty) VALUES (?, ?)`, st.Version, st.Dirty)
	return err
}

// scanAll reads one column of every row of query.
func scanAll[T any](ctx context.Context, tx *sql.Tx, query string) ([]T, error) {
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Timestamps are stored as unix microseconds.
func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// broken answers a write that broke a foreign key (missing) or a unique
// key (exists): store.Broken, with SQLite's extended result codes.
func broken(err, missing, exists error) error {
	c := store.NoConstraint
	if se := (*sqlite.Error)(nil); errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			c = store.ForeignKey
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			c = store.Unique
		}
	}
	return store.Broken(err, c, missing, exists)
}

// notFound turns "no row" into the not-found error of what id names.
func notFound(err error, nf func(id string) error, id string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return nf(id)
	}
	return err
}

// wrap names the driver and the operation in a method's error.
func wrap(errp *error, op string) { store.Wrap(errp, "sqlite", op) }

// CountRows counts a table's rows, for the conformance suite's checks of
// what no method shows (the rows a delete took with it).
func (db *DB) CountRows(ctx context.Context, table string) (n int64, err error) {
	defer wrap(&err, "CountRows")
	err = db.r.QueryRowContext(ctx, `SELECT count(*) FROM "`+strings.ReplaceAll(table, `"`, `""`)+`"`).Scan(&n)
	return n, err
}

// PoolStats reports the writer (one connection) and the readers together;
// SQLite serves one process, so it has no budgets to divide.
func (db *DB) PoolStats() store.PoolStats {
	w, r := db.w.Stats(), db.r.Stats()
	return store.PoolStats{Max: w.MaxOpenConnections + r.MaxOpenConnections, InUse: w.InUse + r.InUse, Idle: w.Idle + r.Idle}
}

// classify marks an error SQLite answered that writing the same data again
// cannot cure (store.IsPermanent): a constraint, a value too big or of the
// wrong type. A busy or locked database, or a full disk, may pass.
func classify(err error) error {
	if se := (*sqlite.Error)(nil); errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CONSTRAINT, sqlite3.SQLITE_TOOBIG, sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_RANGE:
			return store.Permanent(err)
		}
	}
	return err
}
