package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// jobID is a job id made at t (hub.NewID's layout), the n-th of its
// millisecond: the week it sorts into is t's.
func jobID(t time.Time, n int) string {
	p := hub.IDPrefixAt("dlv", t)
	return p[:len(p)-4] + fmt.Sprintf("%04x", n)
}

// snapshot is a table's row count and a digest of every row's text.
func snapshot(t *testing.T, pool *pgxpool.Pool, table string) string {
	t.Helper()
	var n int64
	var digest string
	if err := pool.QueryRow(context.Background(), `SELECT count(*), md5(coalesce(string_agg(r::text, '|' ORDER BY r::text), ''))
		FROM `+table+` r`).Scan(&n, &digest); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d rows, %s", n, digest)
}

func count(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func partitions(t *testing.T, pool *pgxpool.Pool, parent string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass ORDER BY 1`, parent)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	return out
}

// A schema filled before 019 (four weeks of events, jobs and attempts, a
// job whose id carries no time) is partitioned by the migration with every
// row kept, and the hub works on it: dedup against the old events, ingest,
// claim and complete, old jobs read with their attempts, weeks made ahead
// (rows waiting in the default partition move into theirs), and retention
// by partition drops whole weeks except the one a pending job holds, where
// it deletes rows.
func TestMigrate_PartitionsKeepEveryRowAndTheHubWorksOnThem(t *testing.T) {
	testkit.Long(t)
	ctx := context.Background()
	clock := testkit.NewClock()
	first := time.Date(2026, 10, 12, 9, 0, 0, 0, time.UTC) // a Monday
	clock.Set(first)
	db, err := postgres.Open(ctx, testkit.PostgresPoolURL(t), store.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.MigrateTo(ctx, 18); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	sub := storetest.NewSubscription("acme", "sub_1")
	sub.VerificationState, sub.MaxInFlight = hub.VerificationActive, 10
	if _, err := db.CreateSubscription(ctx, sub); err != nil {
		t.Fatal(err)
	}
	pool := db.Pool()
	// Week w (0..3): events e-w-0..2, a job each with one attempt; week 0's
	// first job waits for a retry, week 1's first is a dead letter, the
	// rest succeeded.
	seq := int64(0)
	var pendingJob, oldJob string
	for w := range 4 {
		for i := range 3 {
			at := first.AddDate(0, 0, 7*w).Add(time.Duration(i) * time.Hour)
			seq++
			if _, err := pool.Exec(ctx, `INSERT INTO events (tenant_id, sequence, ce_id, spec_version, ce_type, event_type, source,
				time, schema_version, schema_major, data_content_type, data, topic, kafka_partition, kafka_offset, received_at)
				VALUES ('acme', $1, $2, '1.0', 'studio.lerian.transaction.posted', 'transaction.posted', '//midaz/ledger',
				'2026-10-12T00:00:00Z', '1.0.0', 1, 'application/json', '{"n":1}', 'ledger', 0, $1, $3)`,
				seq, fmt.Sprintf("e-%d-%d", w, i), at); err != nil {
				t.Fatal(err)
			}
			id := jobID(at, i)
			status, completed := "succeeded", &at
			switch {
			case w == 0 && i == 0:
				status, completed, pendingJob = "pending", nil, id
			case w == 1 && i == 0:
				status = "dead_lettered"
			case w == 2 && i == 1:
				oldJob = id
			}
			if _, err := pool.Exec(ctx, `INSERT INTO delivery_jobs (id, tenant_id, subscription_id, event_sequence, event_id, status,
				attempts, next_attempt_at, enqueued_at, created_at, updated_at, completed_at)
				VALUES ($1, 'acme', 'sub_1', $2, $3, $4, 1, $5, $6, $6, $6, $7)`,
				id, seq, fmt.Sprintf("e-%d-%d", w, i), status, at.AddDate(1, 0, 0), at, completed); err != nil {
				t.Fatal(err)
			}
			if _, err := pool.Exec(ctx, `INSERT INTO delivery_attempts (id, job_id, started_at, duration_ms, status_code)
				VALUES ($1, $2, $3, 40, 200)`, hub.IDPrefixAt("att", at)+fmt.Sprint(i), id, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A job (and attempt) whose id carries no time: the default partition's.
	if _, err := pool.Exec(ctx, `INSERT INTO delivery_jobs (id, tenant_id, subscription_id, event_sequence, event_id, status,
			attempts, next_attempt_at, enqueued_at, created_at, updated_at, completed_at)
		VALUES ('dlv_legacy', 'acme', 'sub_1', 2, 'e-0-1', 'succeeded', 1, $1, $1, $1, $1, $1)`, first); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO delivery_attempts (id, job_id, started_at, duration_ms, status_code)
		VALUES ('att_legacy', 'dlv_legacy', $1, 40, 200)`, first); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE tenants SET last_sequence = 12`); err != nil {
		t.Fatal(err)
	}
	tables := []string{"events", "delivery_jobs", "delivery_attempts"}
	before := map[string]string{}
	for _, tb := range tables {
		before[tb] = snapshot(t, pool, tb)
	}

	clock.Set(time.Date(2026, 11, 18, 12, 0, 0, 0, time.UTC)) // a Wednesday
	if err := db.MigrateTo(ctx, 19); err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if got := snapshot(t, pool, tb); got != before[tb] {
			t.Errorf("%s after the migration: %s, before: %s", tb, got, before[tb])
		}
	}
	// The later migrations (columns added to the partitioned parents)
	// reach every partition; the hub below works on the latest schema.
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	weeks := []string{"w20261012", "w20261019", "w20261026", "w20261102", "w20261116", "w20261123"}
	for _, tb := range tables {
		want := []string{tb + "_default"}
		for _, w := range weeks {
			want = append(want, tb+"_"+w)
		}
		if got := partitions(t, pool, tb); !slices.Equal(got, want) {
			t.Errorf("%s partitions: %v, want %v", tb, got, want)
		}
	}
	if n := count(t, pool, `SELECT count(*) FROM events_w20261019`); n != 3 {
		t.Errorf("events_w20261019 holds %d, want its week's 3", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM delivery_jobs_w20261026`); n != 3 {
		t.Errorf("delivery_jobs_w20261026 holds %d, want its week's 3", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM delivery_attempts_w20261026`); n != 3 {
		t.Errorf("delivery_attempts_w20261026 holds %d, want its jobs' 3", n)
	}
	if j, a, e := count(t, pool, `SELECT count(*) FROM delivery_jobs_default`), count(t, pool, `SELECT count(*) FROM delivery_attempts_default`),
		count(t, pool, `SELECT count(*) FROM events_default`); j != 1 || a != 1 || e != 0 {
		t.Errorf("default partitions hold %d jobs, %d attempts, %d events; want the legacy job and attempt", j, a, e)
	}
	if err := db.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	// The old tables' indexes and foreign key are on the new ones.
	for _, idx := range []string{"events_pkey", "events_ce_id", "events_received_at", "delivery_jobs_pkey", "delivery_jobs_pending",
		"delivery_jobs_in_flight", "delivery_jobs_subscription", "delivery_jobs_completed", "delivery_jobs_event_needed",
		"delivery_jobs_event", "delivery_jobs_dead", "delivery_attempts_pkey", "delivery_attempts_job"} {
		if n := count(t, pool, `SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1`, idx); n != 1 {
			t.Errorf("index %s: %d", idx, n)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO delivery_jobs (id, tenant_id, subscription_id, event_sequence, event_id, status,
			next_attempt_at, enqueued_at, created_at, updated_at) VALUES ('dlv_x', 'acme', 'sub_nope', 1, 'x', 'pending', now(), now(), now(), now())`); err == nil {
		t.Error("a job of a subscription that does not exist was stored: the foreign key is gone")
	}

	// The hub on it: an old ce-id is a duplicate, a new one gets the next
	// sequence and a job, claimed with its event and completed.
	dup, fresh := storetest.NewEvent("acme", "e-2-2"), storetest.NewEvent("acme", "fresh")
	r, err := db.Ingest(ctx, store.IngestParams{Events: []hub.Event{dup, fresh}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Outcomes[0].Verdict != hub.Discard || r.Outcomes[0].Reason != hub.ReasonDuplicate || r.Outcomes[1].Verdict != hub.Accept ||
		r.Outcomes[1].Sequence != 13 || r.Jobs != 1 {
		t.Fatalf("ingest on the migrated schema: %+v", r)
	}
	cs, err := db.ClaimJobs(ctx, store.ClaimParams{Batch: 10, Lease: time.Minute})
	if err != nil || len(cs) != 1 || cs[0].Event.ID != "fresh" {
		t.Fatalf("claim: %+v, %v", cs, err)
	}
	now := clock.Now()
	if _, err := db.CompleteJobs(ctx, store.CompleteParams{Completions: []store.Completion{{
		JobLease: store.JobLease{JobID: cs[0].Job.ID, LeaseToken: cs[0].LeaseToken}, SubscriptionID: "sub_1", Status: hub.JobSucceeded,
		Attempt: &hub.Attempt{ID: hub.NewID("att", now), StartedAt: now, StatusCode: 200, Duration: time.Millisecond}}}}); err != nil {
		t.Fatal(err)
	}
	if j, as, err := db.GetJob(ctx, "acme", oldJob); err != nil || j.Status != hub.JobSucceeded || len(as) != 1 {
		t.Fatalf("an old job: %+v, %d attempts, %v", j, len(as), err)
	}
	if evs, err := db.ListEvents(ctx, store.ListEventsParams{TenantID: "acme", Limit: 100}); err != nil || len(evs) != 13 {
		t.Fatalf("events listed: %d, %v", len(evs), err)
	}

	// Weeks ahead: a job made in a week that has no partition yet waits
	// in the default partition, and moves into its week when it is made.
	ahead := jobID(time.Date(2026, 12, 15, 0, 0, 0, 0, time.UTC), 0)
	if _, err := pool.Exec(ctx, `INSERT INTO delivery_jobs (id, tenant_id, subscription_id, event_sequence, event_id, status,
			next_attempt_at, enqueued_at, created_at, updated_at, completed_at)
		VALUES ($1, 'acme', 'sub_1', 13, 'fresh', 'succeeded', $2, $2, $2, $2, $2)`, ahead, now); err != nil {
		t.Fatal(err)
	}
	// A busy table (a long query holding events' default partition) is
	// left for the next try; the other tables get their weeks.
	hold, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, `LOCK TABLE events_default IN ACCESS SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	made, err := db.EnsurePartitions(ctx, now, 4)
	if !errors.Is(err, store.ErrPartitionsBusy) || made != 6 {
		t.Fatalf("EnsurePartitions with events busy = %d, %v; want the 6 weeks of jobs and attempts, and busy", made, err)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	made, err = db.EnsurePartitions(ctx, now, 4)
	if err != nil || made != 3 {
		t.Fatalf("EnsurePartitions = %d, %v; want the 3 weeks of events left", made, err)
	}
	if n := count(t, pool, `SELECT count(*) FROM delivery_jobs_w20261214 WHERE id = $1`, ahead); n != 1 {
		t.Fatal("the job made ahead did not move into its week")
	}
	if made, err := db.EnsurePartitions(ctx, now, 4); err != nil || made != 0 {
		t.Fatalf("EnsurePartitions again = %d, %v; want nothing to make", made, err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM delivery_jobs WHERE id = $1`, ahead); err != nil {
		t.Fatal(err)
	}

	// Retention by partition, bounds a week back (Wednesday 11 November):
	// the four old weeks lie wholly before them. Week 12 October holds the
	// pending job (and its event): kept, its other rows deleted one by
	// one, as is the legacy job in the default partition. The others go
	// whole, the dead letter's event with its week once the dead letter's
	// week is gone.
	bound := now.Add(-7 * 24 * time.Hour)
	pr, err := db.Prune(ctx, store.PruneParams{SucceededBefore: bound, DeadLettersBefore: bound, EventsBefore: bound, ByPartition: true})
	if err != nil {
		t.Fatal(err)
	}
	if pr != (store.PruneResult{SucceededJobs: 3, Events: 2, Partitions: 9}) {
		t.Fatalf("Prune = %+v, want 9 partitions dropped, 3 succeeded jobs (week 12 October's 2, the legacy one) and 2 events deleted", pr)
	}
	for _, tb := range tables {
		want := []string{tb + "_default", tb + "_w20261012", tb + "_w20261116", tb + "_w20261123", tb + "_w20261130", tb + "_w20261207", tb + "_w20261214"}
		if got := partitions(t, pool, tb); !slices.Equal(got, want) {
			t.Errorf("%s partitions after retention: %v, want %v", tb, got, want)
		}
	}
	if j, a, e := count(t, pool, `SELECT count(*) FROM delivery_jobs`), count(t, pool, `SELECT count(*) FROM delivery_attempts`),
		count(t, pool, `SELECT count(*) FROM events`); j != 2 || a != 2 || e != 2 {
		t.Errorf("left %d jobs, %d attempts, %d events; want the pending job's and the fresh one's", j, a, e)
	}
	if j, _, err := db.GetJob(ctx, "acme", pendingJob); err != nil || j.Status != hub.JobPending {
		t.Fatalf("the pending job: %+v, %v", j, err)
	}
	if n := count(t, pool, `SELECT count(*) FROM events WHERE sequence = 1`); n != 1 {
		t.Fatal("the pending job's event is gone")
	}
	// Nothing more to do.
	if pr, err := db.Prune(ctx, store.PruneParams{SucceededBefore: bound, DeadLettersBefore: bound, EventsBefore: bound, ByPartition: true}); err != nil || pr != (store.PruneResult{}) {
		t.Fatalf("a second Prune = %+v, %v", pr, err)
	}
}
