// Package postgres is the PostgreSQL driver of store.Store, on pgx v5. Many
// hub processes may share one database.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/migrate"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// DB is a store.Store on PostgreSQL.
type DB struct {
	pool       *pgxpool.Pool
	budgets    *budgets
	locks      sessionLocks
	opts       store.Options
	migrations []migrate.Migration

	// wakes are this process's listeners of new jobs (ListenJobs); origin
	// tells this process's notifications from others'; listener is the
	// backend pid of the listening connection (tests kill it).
	wakes    store.Wakes
	origin   string
	listener atomic.Uint32
}

var _ store.Store = (*DB)(nil)

// Open connects to url (postgres://...). A search_path parameter in the URL
// selects the schema, which is how tests get a fresh schema each. The pool
// has opts.Pool.MaxConns connections unless the URL's pool_max_conns says
// otherwise, divided between budgets by store.SplitPool.
func Open(ctx context.Context, url string, opts store.Options) (_ *DB, err error) {
	defer wrap(&err, "Open")
	migrations, err := migrate.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(url, "pool_max_conns") && opts.Pool.MaxConns > 0 {
		cfg.MaxConns = int32(opts.Pool.MaxConns)
	}
	if cfg.MaxConns < 2 {
		return nil, fmt.Errorf("pool_max_conns must be at least 2, got %d", cfg.MaxConns)
	}
	if !strings.Contains(url, "pool_min_conns") && opts.Pool.MinConns > 0 {
		cfg.MinConns = int32(min(opts.Pool.MinConns, int(cfg.MaxConns)))
	}
	if !strings.Contains(url, "pool_max_conn_lifetime") && opts.Pool.MaxConnLifetime > 0 {
		cfg.MaxConnLifetime = opts.Pool.MaxConnLifetime
	}
	if opts.OnStatement != nil {
		cfg.ConnConfig.Tracer = observer{on: opts.OnStatement}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	shares := store.SplitPool(int(cfg.MaxConns), !opts.Pool.NoIngest, !opts.Pool.NoDelivery)
	return &DB{pool: pool, budgets: newBudgets(shares, opts.Pool.OnWait), opts: opts.WithDefaults(), migrations: migrations,
		origin: newOrigin()}, nil
}

func (db *DB) Close() error { db.pool.Close(); return nil }

func (db *DB) Ping(ctx context.Context) (err error) {
	defer wrap(&err, "Ping")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	return db.pool.Ping(ctx)
}

// Pool exposes the connection pool to tests and fault injection.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// partitionsVersion is the migration that partitions the tables by week.
const partitionsVersion = 19

const createHistory = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    integer PRIMARY KEY,
	name       text NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT now())`

// Migrate applies pending migrations in one transaction, under an advisory
// lock scoped to the current schema so concurrent starts do not race.
func (db *DB) Migrate(ctx context.Context) (err error) {
	defer wrap(&err, "Migrate")
	return db.migrateTo(ctx, 0)
}

// migrateTo applies the pending migrations up to version upTo (0: all).
func (db *DB) migrateTo(ctx context.Context, upTo int) error {
	migrations := db.migrations
	if upTo > 0 {
		migrations = nil
		for _, m := range db.migrations {
			if m.Version <= upTo {
				migrations = append(migrations, m)
			}
		}
	}
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.streaming-hub.migrate'))`); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if _, err := tx.Exec(ctx, createHistory); err != nil {
			return fmt.Errorf("history: %w", err)
		}
		applied, err := history(ctx, tx)
		if err != nil {
			return err
		}
		last := 0
		err = migrate.Apply(migrations, applied, func(m migrate.Migration) error {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			last = m.Version
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
			return err
		})
		if err != nil || last < partitionsVersion {
			return err
		}
		// The schema has just become partitioned (or was made): its
		// current weeks are made here, before anything is written to it.
		return ensureWeeks(ctx, tx, db.opts.Stamp())
	})
}

// CheckSchema fails unless every migration this binary has is applied.
func (db *DB) CheckSchema(ctx context.Context) (err error) {
	defer wrap(&err, "CheckSchema")
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return err
	}
	var applied []int
	if exists {
		if applied, err = history(ctx, db.pool); err != nil {
			return err
		}
	}
	return migrate.Current(db.migrations, applied)
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func history(ctx context.Context, q querier) ([]int, error) {
	rows, err := q.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// broken answers a write that broke a foreign key (missing) or a unique
// key (exists): store.Broken, with PostgreSQL's error codes.
func broken(err, missing, exists error) error {
	c := store.NoConstraint
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) {
		switch pe.Code {
		case "23503":
			c = store.ForeignKey
		case "23505":
			c = store.Unique
		}
	}
	return store.Broken(err, c, missing, exists)
}

// notFound turns "no row" into the not-found error of what id names.
func notFound(err error, nf func(id string) error, id string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return nf(id)
	}
	return err
}

// wrap names the driver and the operation in a method's error.
func wrap(errp *error, op string) { store.Wrap(errp, "postgres", op) }

// CountRows counts a table's rows, for the conformance suite's checks of
// what no method shows (the rows a delete took with it).
func (db *DB) CountRows(ctx context.Context, table string) (n int64, err error) {
	defer wrap(&err, "CountRows")
	err = db.pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&n)
	return n, err
}

// permanentCodes are the classes of SQLSTATE that writing the same data
// again cannot cure: data exceptions (22), integrity constraints (23),
// syntax or access rules (42) and program limits (54). Everything else (a
// connection lost, a read-only or full database, a serialization failure,
// an admin's termination) may pass.
var permanentCodes = map[string]bool{"22": true, "23": true, "42": true, "54": true}

// classify marks an error the database answered with a permanent SQLSTATE
// (store.IsPermanent): the dispatcher then splits the batch rather than
// retrying it as it is.
func classify(err error) error {
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && len(pe.Code) == 5 && permanentCodes[pe.Code[:2]] {
		return store.Permanent(err)
	}
	return err
}
