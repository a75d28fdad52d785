package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The claims and completions run hundreds of times a second as prepared
// statements. On young tables (a fresh install, before the first ANALYZE)
// a generic plan sees delivery_jobs nearly empty and may scan it once per
// job of the batch, and that plan stays cached while the table grows. The
// dispatch transactions' settings keep every job looked up by an index:
// here each statement is planned on empty tables, as the first executions
// of a fresh install are, and no plan may scan the table. (Without
// enable_seqscan off, both claims' plans do.)
func TestDispatchPlansOnYoungTablesLookJobsUpByIndex(t *testing.T) {
	testkit.Long(t)
	db := testkit.OpenPostgres(t, store.Options{})
	ctx := context.Background()
	now := time.Now()
	results := []store.Completion{
		{JobLease: store.JobLease{JobID: "job_1", LeaseToken: "lease_1"}, SubscriptionID: "sub_1", Status: "succeeded"},
		{JobLease: store.JobLease{JobID: "job_2", LeaseToken: "lease_1"}, SubscriptionID: "sub_1", Status: "pending", NextAttemptAt: now},
	}
	statements := &pgx.Batch{}
	postgres.QueueResults(statements, results, now)
	postgres.QueueClaim(statements, store.ClaimParams{Batch: 16, Lease: time.Minute, Run: 64}, now)
	postgres.QueueClaim(statements, store.ClaimParams{Batch: 16, Lease: time.Minute, Run: 64, Subscriptions: []string{"sub_1"}}, now)
	names := []string{"the results' update", "a claim across all subscriptions", "a targeted claim"}

	tx, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	settings := &pgx.Batch{}
	postgres.QueueDispatchSettings(settings)
	if err := tx.SendBatch(ctx, settings).Close(); err != nil {
		t.Fatal(err)
	}
	for i, q := range statements.QueuedQueries {
		rows, err := tx.Query(ctx, "EXPLAIN "+q.SQL, q.Arguments...)
		if err != nil {
			t.Fatalf("%s: %v", names[i], err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", names[i], err)
		}
		plan := strings.Join(lines, "\n")
		if strings.Contains(plan, "Seq Scan on delivery_jobs") {
			t.Errorf("%s scans delivery_jobs on young tables:\n%s", names[i], plan)
		}
	}
}

// The job listings join each job to its event for the event's type. The
// events table is partitioned by received_at, which a job does not know:
// the join must probe each partition's primary key by (tenant_id,
// sequence), never scan events, or a page of 50 deliveries would read
// every event retained.
func TestJobListingsLookUpTheirEventsTypeByIndex(t *testing.T) {
	testkit.Long(t)
	clock := testkit.NewClock()
	db := testkit.OpenPostgres(t, store.Options{Now: clock.Now})
	ctx := context.Background()
	if _, err := db.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"sub_1", "sub_2"} {
		s := storetest.NewSubscription("acme", id)
		s.VerificationState, s.MaxInFlight = hub.VerificationActive, 10
		if _, err := db.CreateSubscription(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	// Three weeks of events, 1,000 a week, each with two jobs.
	for week := range 3 {
		evs := make([]hub.Event, 1000)
		for i := range evs {
			evs[i] = storetest.NewEvent("acme", fmt.Sprintf("w%d-%04d", week, i))
		}
		if _, err := db.Ingest(ctx, store.IngestParams{Events: evs}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(7 * 24 * time.Hour)
	}
	if _, err := db.Pool().Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	var jobID string
	if err := db.Pool().QueryRow(ctx, `SELECT id FROM delivery_jobs ORDER BY id LIMIT 1`).Scan(&jobID); err != nil {
		t.Fatal(err)
	}
	before, low, limit := store.SearchJobsParams{Limit: 51}.IDRange()
	for _, c := range []struct {
		name string
		sql  string
		args []any
	}{
		{"ListJobs", postgres.ListJobsSQL, []any{"sub_1", "acme", "", "\U0010FFFF", 51}},
		{"GetJob", postgres.GetJobSQL, []any{jobID, "acme"}},
		{"SearchJobs", postgres.SearchJobsSQL(false), []any{"acme", "", before, low, nil, nil, limit, ""}},
		{"SearchJobs by event", postgres.SearchJobsSQL(true), []any{"acme", "", before, low, nil, nil, limit, "", "w1-0007"}},
	} {
		rows, err := db.Pool().Query(ctx, "EXPLAIN "+c.sql, c.args...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		plan := strings.Join(lines, "\n")
		if strings.Contains(plan, "Seq Scan on events") || !strings.Contains(plan, "Index Scan using events_") {
			t.Errorf("%s does not look events up by index:\n%s", c.name, plan)
		}
		if testing.Verbose() {
			t.Logf("%s:\n%s", c.name, plan)
		}
	}
}
