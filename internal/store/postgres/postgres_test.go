package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	hub "github.com/lerianstudio/streaming-hub"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestConformance(t *testing.T) {
	testkit.Long(t)
	storetest.Run(t, func(t testing.TB, o store.Options) store.Store { return testkit.OpenPostgres(t, o) })
}

func BenchmarkIngest(b *testing.B) {
	storetest.BenchIngest(b, func(t testing.TB, o store.Options) store.Store { return testkit.OpenPostgres(t, o) })
}

func BenchmarkIngestFilters(b *testing.B) {
	storetest.BenchIngestFilters(b, func(t testing.TB, o store.Options) store.Store { return testkit.OpenPostgres(t, o) })
}

// The in-flight count lives on the subscription row; should it ever drift
// from the jobs table, maintenance puts it right.
func TestInFlightCountDriftIsRepaired(t *testing.T) {
	testkit.Long(t)
	ctx := context.Background()
	db := testkit.OpenPostgres(t, store.Options{})
	if _, err := db.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	s := storetest.NewSubscription("acme", "sub_1")
	s.VerificationState = hub.VerificationActive
	if _, err := db.CreateSubscription(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest(ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", "1"), storetest.NewEvent("acme", "2")}}); err != nil {
		t.Fatal(err)
	}
	// A count stuck high would stall the subscription forever.
	if _, err := db.Pool().Exec(ctx, `UPDATE subscriptions SET in_flight = 1`); err != nil {
		t.Fatal(err)
	}
	if c, _ := db.ClaimJobs(ctx, store.ClaimParams{Batch: 10, Lease: time.Minute}); len(c) != 0 {
		t.Fatalf("claimed %d past a (wrong) full count", len(c))
	}
	// The quick look for expired leases between maintenance passes does
	// not repair it; the pass does.
	if _, err := db.RecoverLeases(ctx, store.RecoverParams{PoisonThreshold: 5, Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if c, _ := db.ClaimJobs(ctx, store.ClaimParams{Batch: 10, Lease: time.Minute}); len(c) != 0 {
		t.Fatalf("claimed %d after a recovery that does not reconcile", len(c))
	}
	if _, err := db.RecoverLeases(ctx, store.RecoverParams{PoisonThreshold: 5, Limit: 10, Reconcile: true}); err != nil {
		t.Fatal(err)
	}
	c, err := db.ClaimJobs(ctx, store.ClaimParams{Batch: 10, Lease: time.Minute})
	if err != nil || len(c) != 1 || c[0].Job.EventSequence != 1 {
		t.Fatalf("after repair: %+v, %v", c, err)
	}
	var n int
	db.Pool().QueryRow(ctx, `SELECT in_flight FROM subscriptions`).Scan(&n)
	if n != 1 {
		t.Fatalf("in_flight = %d after one claim", n)
	}
}

func BenchmarkDispatch(b *testing.B) {
	storetest.BenchDispatch(b, func(t testing.TB, o store.Options) store.Store { return testkit.OpenPostgres(t, o) })
}

// TestRenewLeases_NeverWaitsForALockedJob: a job whose row a completion
// holds is skipped, not waited for, and still counts as held: renewals
// neither block behind completions nor deadlock with them.
func TestRenewLeases_NeverWaitsForALockedJob(t *testing.T) {
	testkit.Long(t)
	ctx := context.Background()
	url := testkit.PostgresURL(t)
	a, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	sub := storetest.NewSubscription("acme", "sub_1")
	sub.VerificationState = hub.VerificationActive
	if _, err := a.CreateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Ingest(ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", "evt-1")}}); err != nil {
		t.Fatal(err)
	}
	cs, err := a.ClaimJobs(ctx, store.ClaimParams{Batch: 1, Lease: time.Minute})
	if err != nil || len(cs) != 1 {
		t.Fatalf("claim: %d jobs, %v", len(cs), err)
	}
	claimed := cs[0]
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM delivery_jobs WHERE id = $1 FOR UPDATE`, claimed.Job.ID); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a safety net: the call must not wait at all
	defer cancel()
	lost, err := a.RenewLeases(rctx, store.RenewParams{Leases: []store.JobLease{{JobID: claimed.Job.ID, LeaseToken: claimed.LeaseToken}}, Lease: time.Minute})
	if err != nil || len(lost) != 0 {
		t.Fatalf("renewing a locked job: lost %v, err %v", lost, err)
	}
	lost, err = a.RenewLeases(rctx, store.RenewParams{Leases: []store.JobLease{{JobID: claimed.Job.ID, LeaseToken: "another"}}, Lease: time.Minute})
	if err != nil || len(lost) != 1 {
		t.Fatalf("a lease that is not the caller's: lost %v, err %v", lost, err)
	}
}

// TestRollupsLeaveRoomForHOTUpdates: every completion batch updates its
// subscriptions' current rollup rows in place; with room on the page those
// updates write no index entries (the completion path's cost, issue 15).
func TestRollupsLeaveRoomForHOTUpdates(t *testing.T) {
	testkit.Long(t)
	db := testkit.OpenPostgres(t, store.Options{})
	var opts []string
	if err := db.Pool().QueryRow(context.Background(),
		`SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 'subscription_rollups'::regclass`).Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if len(opts) != 1 || opts[0] != "fillfactor=50" {
		t.Fatalf("subscription_rollups options %v, want [fillfactor=50]", opts)
	}
}

// Version 13 (docs/security.md) ends the sessions of before (their CSRF
// secret was kept in clear, and nothing binds them to the admin token) and
// gives the portal links of before an id, so they are listed, opened and
// revoked.
func TestMigrate_ConsoleTrustUpgradesLinksAndEndsSessions(t *testing.T) {
	testkit.Long(t)
	ctx := context.Background()
	// A schema at version 12, before the migration under test.
	db, err := postgres.Open(ctx, testkit.PostgresPoolURL(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.MigrateTo(ctx, 12); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `INSERT INTO tenants (id, name, status, created_at, updated_at) VALUES ('acme', 'acme', 'active', now(), now())`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	hash := store.HashToken("old-link")
	if _, err := db.Pool().Exec(ctx, `INSERT INTO console_sessions (token_hash, tenant_id, key_id, csrf_secret, created_at, last_used_at, expires_at)
		VALUES ('old-session', '', '', 'in-clear', $1, $1, $2)`, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `INSERT INTO portal_links (token_hash, tenant_id, created_at, expires_at) VALUES ($1, 'acme', $2, $3)`,
		hash, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	storetest.CheckConsoleTrustUpgrade(t, db, hash)
}
