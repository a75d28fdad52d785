package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// EnvBenchRows sets how many historic rows BenchmarkLargeTables puts in
// each of events, delivery_jobs and delivery_attempts before measuring.
const EnvBenchRows = "STREAMING_HUB_BENCH_ROWS"

// BenchmarkLargeTables measures ingest, claim+complete, a pull page and a
// retention batch on tables that already hold STREAMING_HUB_BENCH_ROWS
// rows each (three tables: 3x rows in all), against the same on empty
// tables (STREAMING_HUB_BENCH_ROWS=0 or unset), which hold the same seven
// days of health rollups as a filled schema. The filled schema,
// bench_weeks_rows_<N> (partitioned by week: migration 019), is kept for
// later runs (filling takes a while); drop it by hand when done.
//
//	STREAMING_HUB_BENCH_ROWS=33400000 go test ./store/postgres -run '^$' -bench LargeTables -benchtime 20000x -timeout 6h
func BenchmarkLargeTables(b *testing.B) {
	rows := int64(0)
	if v := os.Getenv(EnvBenchRows); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			b.Fatalf("%s: want a row count, got %q", EnvBenchRows, v)
		}
		rows = n
	}
	if rows == 0 {
		// Empty history, but the same seven days of rollups as a filled
		// schema: the health read is compared at equal rollups, so the
		// ratio says what the history itself costs it.
		s := testkit.OpenPostgres(b, store.Options{})
		ctx := context.Background()
		if err := storetest.BenchSetup(ctx, s); err != nil {
			b.Fatal(err)
		}
		if err := seedRollups(ctx, s.Pool(), 33_400_000, time.Now().Add(-7*24*time.Hour)); err != nil {
			b.Fatal(err)
		}
		storetest.BenchTables(b, s, 0)
		return
	}
	base := testkit.PostgresURL(b) // skips without PostgreSQL; its own schema goes unused
	ctx := context.Background()
	schema := fmt.Sprintf("bench_weeks_rows_%d", rows)
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+schema); err != nil {
		b.Fatal(err)
	}
	s, err := postgres.Open(ctx, u.String(), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	var filled bool
	conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'bench_filled')`, schema).Scan(&filled)
	if !filled {
		fill(b, conn, s, rows, time.Now().Add(-7*24*time.Hour))
		if _, err := conn.Exec(ctx, `CREATE TABLE bench_filled (rows bigint)`); err != nil {
			b.Fatal(err)
		}
	}
	var events, jobs int64
	conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM delivery_jobs)`).Scan(&events, &jobs)
	var size string
	conn.QueryRow(ctx, `SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`, schema).Scan(&size)
	b.Logf("schema %s: about %d events, %d delivery jobs, %s with indexes", schema, events, jobs, size)
	storetest.BenchTables(b, s, rows/storetest.BenchTenants)
}

// fill writes rows historic events, succeeded jobs and their attempts,
// received over the seven days from from, for BenchTenants tenants, in
// chunks of a million, then vacuums and analyzes: from a week ago, the
// steady state of a busy hub at its retention bound. Job ids carry their
// creation time (hub.NewID's layout), so on a partitioned schema the rows
// land in the weeks they were made in, which are made first.
func fill(b *testing.B, conn *pgx.Conn, s store.Store, rows int64, from time.Time) {
	ctx := context.Background()
	if err := storetest.BenchSetup(ctx, s); err != nil {
		b.Fatal(err)
	}
	var partitioned bool
	if err := conn.QueryRow(ctx, `SELECT to_regproc('streaming_hub_add_week') IS NOT NULL`).Scan(&partitioned); err != nil {
		b.Fatal(err)
	}
	if p, ok := s.(store.Partitioner); ok && partitioned {
		if _, err := p.EnsurePartitions(ctx, from, 1); err != nil {
			b.Fatal(err)
		}
	}
	const at = `$5::timestamptz + (i::float8 / $3) * interval '167 hours'`
	const jobID = `'dlv_' || lpad(to_hex(floor(extract(epoch FROM ` + at + `) * 1000)::bigint), 12, '0') || lpad(to_hex(i), 20, '0')`
	const tenant = `'t' || lpad((i % $4)::text, 3, '0')`
	queries := []string{
		`INSERT INTO events (tenant_id, sequence, ce_id, spec_version, ce_type, event_type, source, subject, time,
			schema_version, schema_major, data_content_type, data, topic, kafka_partition, kafka_offset, received_at)
		SELECT ` + tenant + `, i / $4 + 1, md5(i::text), '1.0', 'studio.lerian.transaction.posted', 'transaction.posted',
			'//midaz/ledger', 'tx-' || i, '2026-11-23T12:00:00Z', '1.0.0', 1, 'application/json',
			convert_to('{"id":"' || i || '","amount":"10.00","currency":"BRL"}', 'UTF8'),
			'lerian.streaming.ledger_transaction.posted', (i % 8)::int, i / 8, ` + at + `
		FROM generate_series($1::bigint, $2::bigint - 1) AS i`,
		`INSERT INTO delivery_jobs (id, tenant_id, subscription_id, event_sequence, event_id, status, attempts,
			next_attempt_at, enqueued_at, created_at, updated_at, completed_at)
		SELECT ` + jobID + `, ` + tenant + `, 'sub_' || ` + tenant + `, i / $4 + 1, md5(i::text),
			'succeeded', 1, ` + at + `, ` + at + `, ` + at + `, ` + at + ` + interval '40 ms', ` + at + ` + interval '40 ms'
		FROM generate_series($1::bigint, $2::bigint - 1) AS i`,
		`INSERT INTO delivery_attempts (id, job_id, started_at, duration_ms, status_code)
		SELECT 'att_' || lpad(to_hex(i), 32, '0'), ` + jobID + `, ` + at + `, 40, 200
		FROM generate_series($1::bigint, $2::bigint - 1) AS i WHERE $4::int > 0`,
	}
	const chunk = 1_000_000
	start := time.Now()
	for lo := int64(0); lo < rows; lo += chunk {
		hi := min(lo+chunk, rows)
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, q := range queries {
				if _, err := tx.Exec(ctx, q, lo, hi, rows, storetest.BenchTenants, from); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(os.Stderr, "fill: %d of %d rows per table (%s)\n", hi, rows, time.Since(start).Round(time.Second))
	}
	if err := seedRollups(ctx, conn, rows, from); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE tenants t SET last_sequence = (SELECT coalesce(max(sequence), 0) FROM events e WHERE e.tenant_id = t.id)`,
		`VACUUM ANALYZE events`, `VACUUM ANALYZE delivery_jobs`, `VACUUM ANALYZE delivery_attempts`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	fmt.Fprintf(os.Stderr, "fill: done in %s\n", time.Since(start).Round(time.Second))
}

// seedRollups writes the health rollups the completions of rows jobs
// would have written over the seven days from from: one hourly bucket per
// subscription.
func seedRollups(ctx context.Context, db interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, rows int64, from time.Time) error {
	_, err := db.Exec(ctx, `INSERT INTO subscription_rollups (subscription_id, bucket_start, successes, h2, last_success_at)
		SELECT 'sub_t' || lpad(t::text, 3, '0'), date_trunc('hour', $3::timestamptz) + h * interval '1 hour',
			$1::bigint / $2 / 168, $1::bigint / $2 / 168, date_trunc('hour', $3::timestamptz) + h * interval '1 hour'
		FROM generate_series(0, $2 - 1) AS t, generate_series(0, 167) AS h
		ON CONFLICT DO NOTHING`, rows, storetest.BenchTenants, from)
	return err
}

// BenchmarkRetentionWeek measures what retention costs for one week of
// history (STREAMING_HUB_BENCH_ROWS events, succeeded jobs and attempts,
// default 100,000, made over last week): deleted row by row on the
// unpartitioned schema of before (migration 018), against its week's
// partitions dropped (019, Prune with ByPartition). Each run fills a fresh
// schema, untimed, then times the Prune calls until nothing is left.
//
//	STREAMING_HUB_BENCH_ROWS=1000000 go test ./internal/store/postgres -run '^$' -bench RetentionWeek -benchtime 1x -timeout 2h
func BenchmarkRetentionWeek(b *testing.B) {
	rows := int64(100_000)
	if v := os.Getenv(EnvBenchRows); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("%s: want a row count, got %q", EnvBenchRows, v)
		}
		rows = n
	}
	ctx := context.Background()
	thisWeek := time.Now().UTC().Truncate(24 * time.Hour)
	for thisWeek.Weekday() != time.Monday {
		thisWeek = thisWeek.AddDate(0, 0, -1)
	}
	lastWeek := thisWeek.AddDate(0, 0, -7)
	for _, mode := range []string{"rows-unpartitioned", "partitions"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				url := testkit.PostgresURL(b)
				s, err := postgres.Open(ctx, url, store.Options{})
				if err != nil {
					b.Fatal(err)
				}
				version := 18
				if mode == "partitions" {
					version = 0
				}
				if err := s.MigrateTo(ctx, version); err != nil {
					b.Fatal(err)
				}
				conn, err := pgx.Connect(ctx, url)
				if err != nil {
					b.Fatal(err)
				}
				fill(b, conn, s, rows, lastWeek)
				p := store.PruneParams{SucceededBefore: thisWeek, DeadLettersBefore: thisWeek, EventsBefore: thisWeek,
					Batch: 1000, ByPartition: mode == "partitions"}
				var total store.PruneResult
				b.StartTimer()
				start := time.Now()
				for {
					r, err := s.Prune(ctx, p)
					if err != nil {
						b.Fatal(err)
					}
					total.SucceededJobs += r.SucceededJobs
					total.Events += r.Events
					total.Partitions += r.Partitions
					if !r.Full(p.Batch) {
						break
					}
				}
				took := time.Since(start)
				b.StopTimer()
				var left int64
				conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM delivery_jobs) + (SELECT count(*) FROM delivery_attempts)`).Scan(&left)
				if left != 0 {
					b.Fatalf("%d rows left after retention", left)
				}
				b.ReportMetric(took.Seconds()*1000, "ms/week")
				b.ReportMetric(float64(3*rows)/took.Seconds(), "rows/s")
				b.Logf("%s: %d events, jobs and attempts each; %+v in %s", mode, rows, total, took.Round(time.Millisecond))
				conn.Close(ctx)
				s.Close()
			}
		})
	}
}

// BenchmarkMigratePartitions times migration 019 on a schema at 018 that
// holds STREAMING_HUB_BENCH_ROWS (default 100,000) events, succeeded jobs
// and attempts made over the last week: the copy into weekly partitions,
// index builds and ANALYZE that an upgrade runs in one transaction.
//
//	STREAMING_HUB_BENCH_ROWS=1000000 go test ./internal/store/postgres -run '^$' -bench MigratePartitions -benchtime 1x -timeout 2h
func BenchmarkMigratePartitions(b *testing.B) {
	rows := int64(100_000)
	if v := os.Getenv(EnvBenchRows); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			b.Fatalf("%s: want a row count, got %q", EnvBenchRows, v)
		}
		rows = n
	}
	ctx := context.Background()
	for range b.N {
		b.StopTimer()
		url := testkit.PostgresURL(b)
		s, err := postgres.Open(ctx, url, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.MigrateTo(ctx, 18); err != nil {
			b.Fatal(err)
		}
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			b.Fatal(err)
		}
		fill(b, conn, s, rows, time.Now().Add(-7*24*time.Hour))
		var size string
		conn.QueryRow(ctx, `SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_class c
			WHERE c.relnamespace = current_schema()::regnamespace AND c.relname IN ('events', 'delivery_jobs', 'delivery_attempts')`).Scan(&size)
		b.StartTimer()
		start := time.Now()
		if err := s.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.StopTimer()
		var n int64
		conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM delivery_jobs) + (SELECT count(*) FROM delivery_attempts)`).Scan(&n)
		if n != 3*rows {
			b.Fatalf("%d rows after the migration, want %d", n, 3*rows)
		}
		b.ReportMetric(float64(n)/took.Seconds(), "rows/s")
		b.Logf("019 on %d events, jobs and attempts each (%s with indexes): %s", rows, size, took.Round(time.Millisecond))
		conn.Close(ctx)
		s.Close()
	}
}
