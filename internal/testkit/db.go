package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// EnvPostgres and EnvRedis name the services tests may use.
const (
	EnvPostgres = "STREAMING_HUB_TEST_POSTGRES_URL"
	EnvRedis    = "STREAMING_HUB_TEST_REDIS_URL"
)

// PostgresURL returns a URL whose search_path is a fresh, empty schema that is
// dropped when the test ends. It skips the test when EnvPostgres is unset.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvPostgres)
	if base == "" {
		t.Skip(EnvPostgres + " is not set: skipping PostgreSQL test (.ci/run sets it)")
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if isCode(err, "3D000") { // invalid_catalog_name: the database is not there yet
		if err = createDatabase(ctx, base); err == nil {
			conn, err = pgx.Connect(ctx, base)
		}
	}
	if err != nil {
		t.Fatalf("connect to %s: %v", EnvPostgres, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Logf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Logf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvPostgres, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	// A test's commits need not wait for the disk: a crash of the test
	// server is not a case tests make, and the wait per commit (fsync)
	// was most of the PostgreSQL tests' time. Durability against a crash
	// of the hub's process is untouched: a commit is still a commit.
	if q.Get("synchronous_commit") == "" {
		q.Set("synchronous_commit", "off")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// createDatabase creates the database base names, through the server's
// maintenance database "postgres" with the same credentials, so the test
// command needs no step before it. Another package creating it at the
// same moment is no error.
func createDatabase(ctx context.Context, base string) error {
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		return err
	}
	name := cfg.Database
	cfg.Database = "postgres"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if err != nil && !isCode(err, "42P04") && !isCode(err, "23505") { // duplicate_database; a concurrent create's catalog row
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

func isCode(err error, code string) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == code
}

// PoolMaxConns is the connection pool size of every store a test opens on
// PostgreSQL: the server allows 100 connections in all, shared by every test
// package running at once (and by whoever else uses it), and pgx's default
// grows with the machine's cores.
const PoolMaxConns = 4

// PostgresPoolURL is PostgresURL with the pool capped at PoolMaxConns, for
// what opens a pgx pool on it (the store, a hub); pgx.Connect rejects the
// pool's parameter, so a single connection takes PostgresURL.
func PostgresPoolURL(t testing.TB) string {
	t.Helper()
	return SmallPool(PostgresURL(t))
}

// SmallPool caps the pgx pool of a PostgreSQL URL at PoolMaxConns, unless
// the URL sets its own size.
func SmallPool(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	if q.Get("pool_max_conns") == "" {
		q.Set("pool_max_conns", strconv.Itoa(PoolMaxConns))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// SQLitePath returns the path of a database file in the test's temp dir.
func SQLitePath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "hub.db")
}
