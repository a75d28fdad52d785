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
	"time"

	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	hub "github.com/lerianstudio/streaming-hub"
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
}

var _ store.Store = (*DB)(nil)

// Open opens (creating if needed) the database file at path.
func Open(ctx context.Context, path string, opts store.Options) (*DB, error) {
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
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", dsn)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	r.SetMaxOpenConns(4)
	db := &DB{w: w, r: r, path: path, opts: opts.WithDefaults(), migrations: migrations}
	if err := w.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	return db, nil
}

func (db *DB) Close() error { return errors.Join(db.r.Close(), db.w.Close()) }

func (db *DB) Ping(ctx context.Context) error { return db.r.PingContext(ctx) }

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

func (db *DB) Migrate(ctx context.Context) error {
	return db.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, createHistory); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		applied, err := history(ctx, tx)
		if err != nil {
			return err
		}
		pending, err := migrate.Pending(db.migrations, applied)
		if err != nil {
			return err
		}
		for _, m := range pending {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migrate: %03d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, micros(db.opts.Stamp())); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
		}
		return nil
	})
}

func (db *DB) CheckSchema(ctx context.Context) error {
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n); err != nil {
		return err
	}
	var applied []int
	if n > 0 {
		var err error
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
		return nil, fmt.Errorf("migrate: history: %w", err)
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

func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}

func notFound(err error, format string, args ...any) error {
	if errors.Is(err, sql.ErrNoRows) {
		return hub.Errorf(hub.ENOTFOUND, format, args...)
	}
	return err
}
