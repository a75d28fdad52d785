package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
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
