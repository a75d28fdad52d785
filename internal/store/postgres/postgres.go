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

// The migrations, NNN_name.up.sql (and .down.sql), in golang-migrate's
// layout: the folder the chart's migrations Job copies in (docs/deploy.md).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// DB is a store.Store on PostgreSQL.
type DB struct {
	pool       *pgxpool.Pool
	budgets    *budgets
	locks      sessionLocks
	opts       store.Options
	migrations []migrate.Migration
	// lockPath is the path of the URL opened, the database name
	// golang-migrate's CLI computes its advisory lock from (schema.go).
	lockPath string

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
		lockPath: urlPath(url), origin: newOrigin()}, nil
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
