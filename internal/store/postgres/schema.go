package postgres

import (
	"context"
	"fmt"
	"hash/crc32"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/lerianstudio/streaming-hub/internal/store/migrate"
)

// Migrate applies pending migrations in one transaction, under the
// advisory locks golang-migrate and older hubs take, so that neither they
// nor replicas starting together run at the same time.
func (db *DB) Migrate(ctx context.Context) (err error) {
	defer wrap(&err, "Migrate")
	return db.migrateTo(ctx, 0)
}

// migrateTo applies the pending migrations up to version upTo (0: all).
func (db *DB) migrateTo(ctx context.Context, upTo int) error {
	migrations := db.migrations
	if upTo > 0 {
		migrations = migrations[:min(upTo, len(migrations))]
	}
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if err := db.lockMigrations(ctx, tx); err != nil {
			return err
		}
		st, err := migrate.Read(ctx, versionTable{tx}, true)
		if err != nil {
			return err
		}
		last, err := migrate.Apply(migrations, st, func(m migrate.Migration) error {
			_, err := tx.Exec(ctx, m.SQL)
			return err
		})
		if err != nil || last == st.Version {
			return err
		}
		if err := (versionTable{tx}).Set(ctx, migrate.State{Version: last}); err != nil {
			return fmt.Errorf("schema_migrations: %w", err)
		}
		if last < partitionsVersion {
			return nil
		}
		// The schema has just become partitioned (or was made): its
		// current weeks are made here, before anything is written to it.
		// (After golang-migrate's Job the default partitions take the
		// rows until serve's partition pass makes the weeks, at start.)
		return ensureWeeks(ctx, tx, db.opts.Stamp())
	})
}

// CheckSchema fails unless every migration this binary has is applied. It
// writes nothing.
func (db *DB) CheckSchema(ctx context.Context) (err error) {
	defer wrap(&err, "CheckSchema")
	return pgx.BeginTxFunc(ctx, db.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		st, err := migrate.Read(ctx, versionTable{tx}, false)
		if err != nil {
			return err
		}
		return migrate.Current(db.migrations, st)
	})
}

// lockMigrations takes, for the transaction, the advisory locks of every
// runner that may migrate this schema: golang-migrate's (computed as its
// postgres driver does, from the database name and the schema and table of
// its version table: the CLI names the database by its URL's path, a
// library caller by current_database(), so both) and the one hubs before
// golang-migrate's layout took. Always in the same order, so two hubs
// never wait for each other crosswise; golang-migrate holds one at a time.
func (db *DB) lockMigrations(ctx context.Context, tx pgx.Tx) error {
	var database, schema string
	if err := tx.QueryRow(ctx, `SELECT current_database(), current_schema()`).Scan(&database, &schema); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	keys := []int64{migrateLockID(database, schema)}
	if db.lockPath != "" && db.lockPath != database {
		keys = append(keys, migrateLockID(db.lockPath, schema))
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.streaming-hub.migrate'))`); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if len(keys) == 2 && keys[1] < keys[0] {
		keys[0], keys[1] = keys[1], keys[0]
	}
	for _, k := range keys {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, k); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
	}
	return nil
}

// migrateTable is golang-migrate's version table.
const migrateTable = "schema_migrations"

// migrateLockID is golang-migrate's postgres advisory lock id
// (database.GenerateAdvisoryLockId(database, schema, table)): the CRC-32
// of "schema\x00table\x00database" times its salt, in 32 bits.
func migrateLockID(database, schema string) int64 {
	const salt = 1486364155
	sum := crc32.ChecksumIEEE([]byte(strings.Join([]string{schema, migrateTable, database}, "\x00")))
	return int64(sum * uint32(salt))
}

// urlPath is the path of a postgres:// URL as golang-migrate's CLI reads
// it (its database name); "" for anything else.
func urlPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return ""
	}
	return u.Path
}

// versionTable is schema_migrations in the current schema, as
// golang-migrate's postgres driver makes it.
type versionTable struct{ tx pgx.Tx }

func (t versionTable) Columns(ctx context.Context) ([]string, error) {
	rows, err := t.tx.Query(ctx, `SELECT column_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1`, migrateTable)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func (t versionTable) History(ctx context.Context) ([]int, error) {
	rows, err := t.tx.Query(ctx, `SELECT version FROM `+t.name(ctx)+` ORDER BY version`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

func (t versionTable) State(ctx context.Context) ([]migrate.State, error) {
	rows, err := t.tx.Query(ctx, `SELECT version, dirty FROM `+t.name(ctx))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (migrate.State, error) {
		var st migrate.State
		var v int64
		err := r.Scan(&v, &st.Dirty)
		st.Version = int(v)
		return st, err
	})
}

func (t versionTable) Replace(ctx context.Context) error {
	name := t.name(ctx)
	_, err := t.tx.Exec(ctx, `DROP TABLE IF EXISTS `+name+`;
		CREATE TABLE `+name+` (version bigint not null primary key, dirty boolean not null)`)
	return err
}

func (t versionTable) Set(ctx context.Context, st migrate.State) error {
	name := t.name(ctx)
	if _, err := t.tx.Exec(ctx, `TRUNCATE `+name); err != nil {
		return err
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO `+name+` (version, dirty) VALUES ($1, $2)`, st.Version, st.Dirty)
	return err
}

// name is the table, qualified by the current schema as golang-migrate
// qualifies it (an unqualified name could find another schema's table on
// the search path).
func (t versionTable) name(ctx context.Context) string {
	var schema string
	if err := t.tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return migrateTable // the statement that follows fails the same way
	}
	return pgx.Identifier{schema, migrateTable}.Sanitize()
}
