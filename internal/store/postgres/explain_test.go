package postgres_test

import (
	"context"
	"fmt"
	"os"
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

// TestExplainClaims prints EXPLAIN (ANALYZE, BUFFERS) of the claims with
// 200 tenants of one subscription each, 2,000 jobs delivered before and
// one due: the low-rate shape of docs/performance.md. It only runs with
// STREAMING_HUB_EXPLAIN=1 (docs/performance.md quotes it).
func TestExplainClaims(t *testing.T) {
	if os.Getenv("STREAMING_HUB_EXPLAIN") == "" {
		t.Skip("STREAMING_HUB_EXPLAIN=1 prints the claims' plans")
	}
	db := testkit.OpenPostgres(t, store.Options{})
	ctx := context.Background()
	const tenants = 200
	var subs []string
	for i := range tenants {
		id := fmt.Sprintf("t%03d", i)
		if _, err := db.CreateTenant(ctx, store.CreateTenantParams{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
		s := storetest.NewSubscription(id, "sub_"+id)
		s.VerificationState, s.MaxInFlight = hub.VerificationActive, 1
		if _, err := db.CreateSubscription(ctx, s); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s.ID)
	}
	for round := range 10 {
		var evs []hub.Event
		for i := range tenants {
			evs = append(evs, storetest.NewEvent(fmt.Sprintf("t%03d", i), fmt.Sprintf("e-%d", round)))
		}
		if _, err := db.Ingest(ctx, store.IngestParams{Events: evs}); err != nil {
			t.Fatal(err)
		}
		for {
			claimed, err := db.ClaimJobs(ctx, store.ClaimParams{Batch: 64, Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if len(claimed) == 0 {
				break
			}
			var cs []store.Completion
			for _, c := range claimed {
				cs = append(cs, store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobSucceeded,
					SubscriptionID: c.Job.SubscriptionID, Attempt: &hub.Attempt{ID: hub.NewID("att", time.Now()), StartedAt: time.Now(), StatusCode: 200}})
			}
			if _, err := db.CompleteJobs(ctx, store.CompleteParams{Completions: cs}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.Pool().Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest(ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("t007", "due")}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	statements := &pgx.Batch{}
	postgres.QueueClaim(statements, store.ClaimParams{Batch: 16, Lease: time.Minute, Run: 64}, now)
	postgres.QueueClaim(statements, store.ClaimParams{Batch: 16, Lease: time.Minute, Run: 64, Subscriptions: []string{subs[7]}}, now)
	postgres.QueueClaim(statements, store.ClaimParams{Batch: 16, Lease: time.Minute, Run: 64, Subscriptions: []string{subs[8]}}, now)
	names := []string{"a claim across all subscriptions", "a targeted claim (one subscription, one due job)", "a targeted claim (one subscription, nothing due)"}
	for i, q := range statements.QueuedQueries {
		tx, err := db.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		settings := &pgx.Batch{}
		postgres.QueueDispatchSettings(settings)
		if err := tx.SendBatch(ctx, settings).Close(); err != nil {
			t.Fatal(err)
		}
		for range 3 { // warm
			tx.Exec(ctx, "SAVEPOINT w")
			r, _ := tx.Query(ctx, q.SQL, q.Arguments...)
			r.Close()
			tx.Exec(ctx, "ROLLBACK TO SAVEPOINT w")
		}
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+q.SQL, q.Arguments...)
		if err != nil {
			t.Fatalf("%s: %v", names[i], err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", names[i], err)
		}
		t.Logf("%s:\n%s", names[i], strings.Join(lines, "\n"))
		tx.Rollback(ctx)
	}
}

// backendCPU sums the CPU (ns, /proc/<pid>/schedstat) of the backends of
// the application app.
func backendCPU(t *testing.T, conn *pgx.Conn, app string) time.Duration {
	rows, err := conn.Query(context.Background(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, app)
	if err != nil {
		t.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		t.Fatal(err)
	}
	var sum time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
		if err != nil {
			continue
		}
		var ns int64
		fmt.Sscan(string(b), &ns)
		sum += time.Duration(ns)
	}
	return sum
}

// TestLowRateCost measures the PostgreSQL CPU (the backends'
// /proc/<pid>/schedstat) of each store call of one event's way at a low
// rate (200 tenants, one subscription each): its ingest, the claim that
// takes its job (across all subscriptions; with STREAMING_HUB_EXPLAIN=
// targeted, of its subscription), the completion with its hand-off.
//
//	STREAMING_HUB_EXPLAIN=targeted go test ./internal/store/postgres -run TestLowRateCost -v
func TestLowRateCost(t *testing.T) {
	if os.Getenv("STREAMING_HUB_EXPLAIN") == "" {
		t.Skip("STREAMING_HUB_EXPLAIN=1 measures")
	}
	ctx := context.Background()
	app := fmt.Sprintf("cost_%d", time.Now().UnixNano())
	url := testkit.PostgresPoolURL(t) + "&application_name=" + app
	db, err := postgres.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	mon, err := pgx.Connect(ctx, os.Getenv(testkit.EnvPostgres))
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close(ctx)
	const tenants = 200
	var subs []string
	for i := range tenants {
		id := fmt.Sprintf("t%03d", i)
		if _, err := db.CreateTenant(ctx, store.CreateTenantParams{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
		s := storetest.NewSubscription(id, "sub_"+id)
		s.VerificationState, s.MaxInFlight = hub.VerificationActive, 1
		if _, err := db.CreateSubscription(ctx, s); err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s.ID)
	}
	var cost [4]time.Duration
	names := []string{"ingest of one event", "claim across all subscriptions", "claim of the event's subscription", "completion with hand-off"}
	targeted := os.Getenv("STREAMING_HUB_EXPLAIN") == "targeted"
	const n = 600
	for i := range n {
		tenant := i % tenants
		c0 := backendCPU(t, mon, app)
		if _, err := db.Ingest(ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent(fmt.Sprintf("t%03d", tenant), fmt.Sprintf("e-%d", i))}}); err != nil {
			t.Fatal(err)
		}
		c1 := backendCPU(t, mon, app)
		p := store.ClaimParams{Batch: 16, Lease: time.Minute, Run: 64}
		k := 1
		if targeted {
			p.Subscriptions, k = []string{subs[tenant]}, 2
		}
		claimed, err := db.ClaimJobs(ctx, p)
		if err != nil || len(claimed) != 1 {
			t.Fatal(len(claimed), err)
		}
		c2 := backendCPU(t, mon, app)
		c := claimed[0]
		cs := []store.Completion{{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobSucceeded,
			SubscriptionID: c.Job.SubscriptionID, Attempt: &hub.Attempt{ID: hub.NewID("att", time.Now()), StartedAt: time.Now(), StatusCode: 200}}}
		if _, err := db.CompleteJobs(ctx, store.CompleteParams{Completions: cs, Next: &store.ClaimParams{Batch: 16, Lease: time.Minute, Run: 64}}); err != nil {
			t.Fatal(err)
		}
		c3 := backendCPU(t, mon, app)
		if i >= 100 { // the first are planned, custom plans, a cold cache
			cost[0] += c1 - c0
			cost[k] += c2 - c1
			cost[3] += c3 - c2
		}
	}
	var total time.Duration
	for i, c := range cost {
		t.Logf("%-40s %6.3f ms", names[i], float64(c)/float64(time.Millisecond)/(n-100))
		total += c
	}
	t.Logf("%-40s %6.3f ms", "per event", float64(total)/float64(time.Millisecond)/(n-100))
}
