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

const createHistory = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	name       TEXT NOT NULL,
	applied_at INTEGER NOT NULL)`

func (db *DB) Migrate(ctx context.Context) (err error) {
	defer wrap(&err, "Migrate")
	return db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, createHistory); err != nil {
			return fmt.Errorf("history: %w", err)
		}
		applied, err := history(ctx, tx)
		if err != nil {
			return err
		}
		return migrate.Apply(db.migrations, applied, func(m migrate.Migration) error {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, micros(db.opts.Stamp()))
			return err
		})
	})
}

func (db *DB) CheckSchema(ctx context.Context) (err error) {
	defer wrap(&err, "CheckSchema")
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n); err != nil {
		return err
	}
	var applied []int
	if n > 0 {
		if applied, err = history(ctx, db.r); err != nil {
			return err
		}
	}
	return migrate.Current(db.migrations, applied)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func history(ctx context.Context, q querier) ([]int, error) {
	rows, err := q.QueryContext(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, rows.Err()
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
