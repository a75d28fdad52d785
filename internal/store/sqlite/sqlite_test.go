package sqlite_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/sqlite"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestConformance(t *testing.T) {
	testkit.Long(t)
	storetest.Run(t, func(t testing.TB, o store.Options) store.Store { return testkit.OpenSQLite(t, o) })
}

func BenchmarkIngest(b *testing.B) {
	storetest.BenchIngest(b, func(t testing.TB, o store.Options) store.Store { return testkit.OpenSQLite(t, o) })
}

func BenchmarkIngestFilters(b *testing.B) {
	storetest.BenchIngestFilters(b, func(t testing.TB, o store.Options) store.Store { return testkit.OpenSQLite(t, o) })
}

func BenchmarkDispatch(b *testing.B) {
	storetest.BenchDispatch(b, func(t testing.TB, o store.Options) store.Store { return testkit.OpenSQLite(t, o) })
}

// Before the two drivers' versions were aligned, SQLite's version 4 was
// the retention index (now 5, after a claim_counter step PostgreSQL has).
// A database migrated then upgrades: 5 runs again and finds its work done.
func TestMigrate_UpgradesADatabaseFromBeforeTheVersionsWereAligned(t *testing.T) {
	ctx := context.Background()
	path := testkit.SQLitePath(t)
	db, err := sqlite.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	// The history the old binary left: four steps, the last the retention
	// index. The steps that came after version 5 are undone as well: that
	// binary never ran them.
	if _, err := raw.ExecContext(ctx, `ALTER TABLE delivery_jobs DROP COLUMN run_ahead;
		UPDATE schema_migrations SET version = 4;
		ALTER TABLE events DROP COLUMN trace_parent;
		ALTER TABLE events DROP COLUMN trace_state;
		ALTER TABLE events DROP COLUMN producer_key_id;
		DROP TABLE subscription_rollups; DROP TABLE event_types_seen; DROP TABLE manifest_sources;
		DROP TABLE console_sessions; DROP TABLE portal_links;
		DROP INDEX delivery_jobs_event; DROP INDEX delivery_jobs_dead;
		ALTER TABLE api_keys DROP COLUMN last_used_at;
		ALTER TABLE subscriptions DROP COLUMN filters;

		ALTER TABLE subscriptions DROP COLUMN rate_limit_per_second;
		ALTER TABLE subscriptions DROP COLUMN destination_config;
		DROP TABLE subscription_backfills; DROP INDEX delivery_jobs_subscription_event; ALTER TABLE subscriptions DROP COLUMN backfill_hold;
		ALTER TABLE subscriptions DROP COLUMN transform;
		ALTER TABLE delivery_attempts DROP COLUMN request_headers; ALTER TABLE delivery_attempts DROP COLUMN response_headers;
		ALTER TABLE delivery_jobs DROP COLUMN replayed_at; ALTER TABLE delivery_jobs DROP COLUMN replayed_by;
		ALTER TABLE delivery_jobs DROP COLUMN replayed_as; ALTER TABLE subscriptions DROP COLUMN held_until;
		DROP TABLE topic_drift; ALTER TABLE subscriptions DROP COLUMN leased_by;
		DROP TABLE dispatchers; ALTER TABLE delivery_jobs DROP COLUMN leased_by`); err != nil {
		t.Fatal(err)
	}
	if err := db.CheckSchema(ctx); err == nil {
		t.Fatal("CheckSchema accepted a database one version behind")
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("Migrate from the old numbering: %v", err)
	}
	if err := db.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	var indexes []string
	rows, err := raw.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND name IN ('delivery_jobs_live_event', 'delivery_jobs_event_needed') ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		rows.Scan(&n)
		indexes = append(indexes, n)
	}
	if len(indexes) != 1 || indexes[0] != "delivery_jobs_event_needed" {
		t.Fatalf("event indexes %v, want only delivery_jobs_event_needed", indexes)
	}
}

// Version 13 (docs/security.md) ends the sessions of before (their CSRF
// secret was kept in clear, and nothing binds them to the admin token) and
// gives the portal links of before an id, so they are listed, opened and
// revoked.
func TestMigrate_ConsoleTrustUpgradesLinksAndEndsSessions(t *testing.T) {
	testkit.Long(t)
	ctx := context.Background()
	path := testkit.SQLitePath(t)
	db, err := sqlite.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	now := time.Now()
	hash := store.HashToken("old-link")
	if _, err := raw.ExecContext(ctx, `DROP INDEX console_sessions_link; DROP INDEX portal_links_id; DROP INDEX portal_links_tenant;
		ALTER TABLE console_sessions DROP COLUMN kind; ALTER TABLE console_sessions DROP COLUMN auth_hash;
		ALTER TABLE console_sessions DROP COLUMN link_id; ALTER TABLE console_sessions DROP COLUMN ends_at;
		ALTER TABLE console_sessions RENAME COLUMN csrf_hash TO csrf_secret;
		ALTER TABLE portal_links DROP COLUMN id; ALTER TABLE portal_links DROP COLUMN used_at;
		ALTER TABLE events DROP COLUMN producer_key_id;
		DROP TABLE subscription_backfills; DROP INDEX delivery_jobs_subscription_event; ALTER TABLE subscriptions DROP COLUMN backfill_hold;
		ALTER TABLE subscriptions DROP COLUMN transform;
		ALTER TABLE delivery_attempts DROP COLUMN request_headers; ALTER TABLE delivery_attempts DROP COLUMN response_headers;
		ALTER TABLE delivery_jobs DROP COLUMN replayed_at; ALTER TABLE delivery_jobs DROP COLUMN replayed_by;
		ALTER TABLE delivery_jobs DROP COLUMN replayed_as; ALTER TABLE console_sessions DROP COLUMN subject;
		ALTER TABLE console_sessions DROP COLUMN sealed_auth; ALTER TABLE subscriptions DROP COLUMN held_until; DROP TABLE topic_drift;
		ALTER TABLE subscriptions DROP COLUMN leased_by;
		DROP TABLE dispatchers; ALTER TABLE delivery_jobs DROP COLUMN leased_by;
		UPDATE schema_migrations SET version = 12`); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, `INSERT INTO console_sessions (token_hash, tenant_id, key_id, csrf_secret, created_at, last_used_at, expires_at)
		VALUES ('old-session', '', '', 'in-clear', ?1, ?1, ?2);
		INSERT INTO portal_links (token_hash, tenant_id, created_at, expires_at) VALUES (?3, 'acme', ?1, ?2)`,
		now.UnixMicro(), now.Add(time.Hour).UnixMicro(), hash); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.CheckConsoleTrustUpgrade(t, db, hash)
}
