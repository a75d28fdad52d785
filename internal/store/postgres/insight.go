package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// pgxtx is what a transaction's statements run on: a pgx.Tx, or a pooled
// connection inside a transaction it began itself (CompleteJobs).
type pgxtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// histogramColumns are h0..h11.
var histogramColumns = func() []string {
	out := make([]string, store.LatencyBuckets)
	for i := range out {
		out[i] = fmt.Sprintf("h%d", i)
	}
	return out
}()

// upsertRollups adds a batch's rollups to the stored ones; the histogram
// travels as one flat array, store.LatencyBuckets per rollup.
var upsertRollups = func() string {
	var pick, add []string
	for i, c := range histogramColumns {
		pick = append(pick, fmt.Sprintf("($8::bigint[])[(v.n - 1) * %d + %d]", store.LatencyBuckets, i+1))
		add = append(add, fmt.Sprintf("%s = r.%s + excluded.%s", c, c, c))
	}
	return `INSERT INTO subscription_rollups AS r (subscription_id, bucket_start, successes, failures, ` +
		strings.Join(histogramColumns, ", ") + `, last_success_at, last_failure_at, last_error)
	SELECT v.sub, v.start, v.s, v.f, ` + strings.Join(pick, ", ") + `, v.ls, v.lf, v.le
	FROM unnest($1::text[], $2::timestamptz[], $3::bigint[], $4::bigint[], $5::timestamptz[], $6::timestamptz[], $7::text[])
		WITH ORDINALITY AS v(sub, start, s, f, ls, lf, le, n)
	ON CONFLICT (subscription_id, bucket_start) DO UPDATE SET
		successes = r.successes + excluded.successes, failures = r.failures + excluded.failures, ` +
		strings.Join(add, ", ") + `,
		last_success_at = greatest(r.last_success_at, excluded.last_success_at),
		last_error = CASE WHEN excluded.last_failure_at IS NOT NULL
			AND (r.last_failure_at IS NULL OR excluded.last_failure_at >= r.last_failure_at)
			THEN excluded.last_error ELSE r.last_error END,
		last_failure_at = greatest(r.last_failure_at, excluded.last_failure_at)`
}()

// queueRollups adds the batch's attempts to their subscriptions' health
// rollups, in the completion transaction (one statement).
func queueRollups(w writer, cs []store.Completion) {
	if rs := store.Rollups(cs); len(rs) > 0 {
		queueRollupRows(w, rs)
	}
}

// queueRollupRows adds rollups to their buckets.
func queueRollupRows(w writer, rs []store.Rollup) {
	n := len(rs)
	subs, errs := make([]string, n), make([]string, n)
	starts := make([]time.Time, n)
	succ, fail := make([]int64, n), make([]int64, n)
	lastOK, lastFail := make([]*time.Time, n), make([]*time.Time, n)
	hist := make([]int64, 0, n*store.LatencyBuckets)
	for i, r := range rs {
		subs[i], starts[i], succ[i], fail[i] = r.SubscriptionID, r.Start, r.Successes, r.Failures
		lastOK[i], lastFail[i], errs[i] = r.LastSuccessAt, r.LastFailureAt, r.LastError
		hist = append(hist, r.Latency[:]...)
	}
	w.write(upsertRollups, subs, starts, succ, fail, lastOK, lastFail, errs, hist)
}

func (db *DB) ListRollups(ctx context.Context, subscriptionID string, from time.Time) (_ []store.Rollup, err error) {
	defer wrap(&err, "ListRollups")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	rows, err := db.pool.Query(ctx, `SELECT subscription_id, bucket_start, successes, failures, `+
		strings.Join(histogramColumns, ", ")+`, last_success_at, last_failure_at, last_error
		FROM subscription_rollups WHERE subscription_id = $1 AND bucket_start >= $2 ORDER BY bucket_start`,
		subscriptionID, from)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Rollup, error) {
		var r store.Rollup
		dest := []any{&r.SubscriptionID, &r.Start, &r.Successes, &r.Failures}
		for i := range r.Latency {
			dest = append(dest, &r.Latency[i])
		}
		dest = append(dest, &r.LastSuccessAt, &r.LastFailureAt, &r.LastError)
		err := row.Scan(dest...)
		r.Start, r.LastSuccessAt, r.LastFailureAt = r.Start.UTC(), utcPtr(r.LastSuccessAt), utcPtr(r.LastFailureAt)
		return r, err
	})
}

func (db *DB) ListHubRollups(ctx context.Context, from time.Time) (_ []store.Rollup, err error) {
	defer wrap(&err, "ListHubRollups")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	rows, err := db.pool.Query(ctx, `SELECT bucket_start, sum(successes)::bigint, sum(failures)::bigint, `+
		sumColumns(histogramColumns)+`, max(last_success_at), max(last_failure_at)
		FROM subscription_rollups WHERE bucket_start >= $1 GROUP BY bucket_start ORDER BY bucket_start`, from)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Rollup, error) {
		var r store.Rollup
		dest := []any{&r.Start, &r.Successes, &r.Failures}
		for i := range r.Latency {
			dest = append(dest, &r.Latency[i])
		}
		dest = append(dest, &r.LastSuccessAt, &r.LastFailureAt)
		err := row.Scan(dest...)
		r.Start, r.LastSuccessAt, r.LastFailureAt = r.Start.UTC(), utcPtr(r.LastSuccessAt), utcPtr(r.LastFailureAt)
		return r, err
	})
}

// sumColumns is "sum(c)::bigint" of each column, comma-separated.
func sumColumns(cols []string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = "sum(" + c + ")::bigint"
	}
	return strings.Join(out, ", ")
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func (db *DB) Backlog(ctx context.Context, subscriptionID string) (_ map[hub.JobStatus]int64, err error) {
	defer wrap(&err, "Backlog")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	var pending, inFlight, dead int64
	err = db.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM delivery_jobs WHERE subscription_id = $1 AND status = 'pending'),
		(SELECT count(*) FROM delivery_jobs WHERE subscription_id = $1 AND status = 'in_flight'),
		(SELECT count(*) FROM delivery_jobs WHERE subscription_id = $1 AND status = 'dead_lettered')`,
		subscriptionID).Scan(&pending, &inFlight, &dead)
	return store.JobCounts(pending, inFlight, dead), err
}

func (db *DB) PruneRollups(ctx context.Context, before time.Time) (_ int, err error) {
	defer wrap(&err, "PruneRollups")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	tag, err := db.pool.Exec(ctx, `DELETE FROM subscription_rollups WHERE bucket_start < $1`, before)
	return int(tag.RowsAffected()), err
}

// queueTypesSeen queues the record of the batch's (tenant, type, major) in the catalog: one
// upsert per batch, which rewrites a row only when its source changed or
// its last_seen_at is more than a minute old, so a busy type costs no
// write per batch.
func queueTypesSeen(w writer, events []hub.Event, outcomes []store.Outcome, now time.Time) {
	seen := store.TypesSeen(events, outcomes, now)
	if len(seen) == 0 {
		return
	}
	var tenants, types, sources []string
	var majors []int32
	for _, s := range seen {
		tenants, types, sources = append(tenants, s.TenantID), append(types, s.EventType), append(sources, s.Source)
		majors = append(majors, int32(s.SchemaMajor))
	}
	w.write(`INSERT INTO event_types_seen AS t (tenant_id, event_type, schema_major, source, first_seen_at, last_seen_at)
		SELECT v.t, v.e, v.m, v.s, $5, $5 FROM unnest($1::text[], $2::text[], $3::int[], $4::text[]) AS v(t, e, m, s)
		ON CONFLICT (tenant_id, event_type, schema_major) DO UPDATE SET source = excluded.source, last_seen_at = excluded.last_seen_at
		WHERE t.source <> excluded.source OR t.last_seen_at < excluded.last_seen_at - interval '1 minute'`,
		tenants, types, majors, sources, now)
}

func (db *DB) ListTypesSeen(ctx context.Context, tenantID string) (_ []store.TypeSeen, err error) {
	defer wrap(&err, "ListTypesSeen")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	rows, err := db.pool.Query(ctx, `SELECT tenant_id, event_type, schema_major, source, first_seen_at, last_seen_at
		FROM event_types_seen WHERE tenant_id = $1 ORDER BY event_type, schema_major`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.TypeSeen, error) {
		var t store.TypeSeen
		err := r.Scan(&t.TenantID, &t.EventType, &t.SchemaMajor, &t.Source, &t.FirstSeenAt, &t.LastSeenAt)
		t.FirstSeenAt, t.LastSeenAt = t.FirstSeenAt.UTC(), t.LastSeenAt.UTC()
		return t, err
	})
}

func (db *DB) RecordManifestFetch(ctx context.Context, url string, at time.Time, manifest []byte, fetchErr string) (err error) {
	defer wrap(&err, "RecordManifestFetch")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	fetchErr = store.CleanText(fetchErr, 1024)
	if manifest != nil {
		_, err = db.pool.Exec(ctx, `INSERT INTO manifest_sources (url, manifest, last_fetched_at, last_success_at, last_error)
			VALUES ($1, $2, $3, $3, '') ON CONFLICT (url) DO UPDATE SET manifest = excluded.manifest,
			last_fetched_at = excluded.last_fetched_at, last_success_at = excluded.last_success_at, last_error = ''`,
			url, manifest, at)
		return err
	}
	_, err = db.pool.Exec(ctx, `INSERT INTO manifest_sources (url, last_fetched_at, last_error) VALUES ($1, $2, $3)
		ON CONFLICT (url) DO UPDATE SET last_fetched_at = excluded.last_fetched_at, last_error = excluded.last_error`,
		url, at, fetchErr)
	return err
}

func (db *DB) ListManifests(ctx context.Context) (_ []store.ManifestSource, err error) {
	defer wrap(&err, "ListManifests")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	rows, err := db.pool.Query(ctx, `SELECT url, manifest, last_fetched_at, last_success_at, last_error
		FROM manifest_sources ORDER BY url`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ManifestSource, error) {
		var m store.ManifestSource
		err := r.Scan(&m.URL, &m.Manifest, &m.LastFetchedAt, &m.LastSuccessAt, &m.LastError)
		m.LastFetchedAt, m.LastSuccessAt = utcPtr(m.LastFetchedAt), utcPtr(m.LastSuccessAt)
		return m, err
	})
}

func (db *DB) GetEvent(ctx context.Context, tenantID, ceID string) (_ hub.Event, _ []hub.Job, err error) {
	defer wrap(&err, "GetEvent")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	ev, err := scanEvent(db.pool.QueryRow(ctx, `SELECT `+eventSelect+` FROM events WHERE tenant_id = $1 AND ce_id = $2`, tenantID, ceID))
	if err != nil {
		return hub.Event{}, nil, notFound(err, store.EventNotFound, ceID)
	}
	jobs, err := collectJobs(db.pool.Query(ctx, `SELECT `+jobReadColumns+` FROM delivery_jobs
		WHERE tenant_id = $1 AND event_id = $2 ORDER BY id DESC LIMIT 1000`, tenantID, ceID))
	for i := range jobs {
		jobs[i].EventType = ev.EventType // all of them this event's jobs: no join needed
	}
	return ev, jobs, err
}

// searchJobsSQL is SearchJobs's query, by event ($9) or not: tenant $1,
// status $2 (” for any), ids in [$4, $3), created in [$5, $6) (each NULL
// for unbounded), $7 jobs, of subscription $8 (” for any).
func searchJobsSQL(byEvent bool) string {
	// The job filter never names the tenant: a condition on tenant_id
	// tempts the planner into AND-ing the (tenant, event_id) index, which
	// reads every job of the tenant. The tenant is the subscriptions'.
	filter := `($2 = '' OR j.status = $2) AND j.id < $3 AND j.id >= $4
		AND ($5::timestamptz IS NULL OR j.created_at >= $5) AND ($6::timestamptz IS NULL OR j.created_at < $6)`
	if byEvent {
		return withEventType(`SELECT ` + prefixed("j.", jobReadColumns) + ` FROM delivery_jobs j WHERE j.tenant_id = $1 AND ` + filter +
			` AND j.event_id = $9 AND ($8 = '' OR j.subscription_id = $8) ORDER BY j.id DESC LIMIT $7`)
	}
	return withEventType(`SELECT ` + prefixed("j.", jobReadColumns) + ` FROM subscriptions s CROSS JOIN LATERAL (
			SELECT j.* FROM delivery_jobs j WHERE j.subscription_id = s.id AND ` + filter + `
			ORDER BY j.id DESC LIMIT $7) j
		WHERE s.tenant_id = $1 AND ($8 = '' OR s.id = $8) ORDER BY j.id DESC LIMIT $7`)
}

// SearchJobs answers from an index whatever the filters: by event (the
// (tenant, event_id) index), by subscription, or across the tenant by
// walking each of its subscriptions' (subscription, id) index newest
// first and merging; a time range is an id range (store.JobIDBound).
func (db *DB) SearchJobs(ctx context.Context, p store.SearchJobsParams) (_ []hub.Job, err error) {
	defer wrap(&err, "SearchJobs")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	before, low, limit := p.IDRange()
	var since, until *time.Time
	if !p.Since.IsZero() {
		since = &p.Since
	}
	if !p.Until.IsZero() {
		until = &p.Until
	}
	args := []any{p.TenantID, string(p.Status), before, low, since, until, limit, p.SubscriptionID}
	if p.EventID != "" {
		args = append(args, p.EventID)
	}
	return collectTypedJobs(db.pool.Query(ctx, searchJobsSQL(p.EventID != ""), args...))
}

func (db *DB) ListAPIKeys(ctx context.Context, tenantID string) (_ []hub.APIKey, err error) {
	defer wrap(&err, "ListAPIKeys")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	rows, err := db.pool.Query(ctx, `SELECT id, tenant_id, created_at, last_used_at FROM api_keys WHERE tenant_id = $1 ORDER BY id`, tenantID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.APIKey, error) {
		var k hub.APIKey
		err := r.Scan(&k.ID, &k.TenantID, &k.CreatedAt, &k.LastUsedAt)
		k.CreatedAt, k.LastUsedAt = k.CreatedAt.UTC(), utcPtr(k.LastUsedAt)
		return k, err
	})
}

func (db *DB) TouchAPIKey(ctx context.Context, id string, at time.Time) (err error) {
	defer wrap(&err, "TouchAPIKey")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	_, err = db.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = $2
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at <= $3)`, id, at, at.Add(-store.KeyTouchInterval))
	return err
}

// report writes, in the transaction q, the operational events of what it
// changed (store.Report): read what they say, then admit and match them
// as ingest does, so they get sequences and deliveries.
func (db *DB) report(ctx context.Context, q pgxtx, r store.Report, now time.Time) error {
	if r.Empty() {
		return nil
	}
	disabled, err := subscriptionStates(ctx, q, r.Disabled)
	if err != nil {
		return err
	}
	recovered, err := subscriptionStates(ctx, q, r.Recovered)
	if err != nil {
		return err
	}
	var dead []store.DeadLetterState
	if len(r.DeadLettered) > 0 {
		rows, err := q.Query(ctx, `SELECT j.id, j.tenant_id, j.subscription_id, j.event_id,
			coalesce(e.event_type, ''), coalesce(e.ce_type, ''), j.dead_letter_reason, j.last_error, j.attempts
			FROM delivery_jobs j LEFT JOIN events e ON e.tenant_id = j.tenant_id AND e.sequence = j.event_sequence
			WHERE j.id = ANY($1) ORDER BY j.id`, r.DeadLettered)
		if err != nil {
			return err
		}
		dead, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.DeadLetterState, error) {
			var d store.DeadLetterState
			return d, row.Scan(&d.JobID, &d.TenantID, &d.SubscriptionID, &d.EventID, &d.EventType, &d.CEType,
				&d.Reason, &d.LastError, &d.Attempts)
		})
		if err != nil {
			return err
		}
	}
	events := store.OperationalEvents(disabled, recovered, dead, now)
	if len(events) == 0 {
		return nil
	}
	w := &pgx.Batch{}
	if _, err := db.admitAndMatch(ctx, q, events, now, w, nil, nil, true); err != nil {
		return err
	}
	return q.SendBatch(ctx, w).Close()
}

func subscriptionStates(ctx context.Context, q pgxtx, ids []string) ([]store.SubscriptionState, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, `SELECT id, tenant_id, name, disabled_reason, disabled_at FROM subscriptions
		WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.SubscriptionState, error) {
		var s store.SubscriptionState
		err := r.Scan(&s.ID, &s.TenantID, &s.Name, &s.DisabledReason, &s.DisabledAt)
		s.DisabledAt = utcPtr(s.DisabledAt)
		return s, err
	})
}

// tenantsOfQueries find a resource's tenants by its id, each from an
// index: the jobs' and subscriptions' primary keys; for a ce-id, the
// (tenant, ce_id) index probed once a tenant.
var tenantsOfQueries = map[store.ResourceKind]string{
	store.ResourceDelivery:     `SELECT tenant_id FROM delivery_jobs WHERE id = $1`,
	store.ResourceSubscription: `SELECT tenant_id FROM subscriptions WHERE id = $1 AND deleted_at IS NULL`,
	store.ResourceEvent: `SELECT t.id FROM tenants t
		WHERE EXISTS (SELECT 1 FROM events e WHERE e.tenant_id = t.id AND e.ce_id = $1) ORDER BY t.id LIMIT 100`,
}

func (db *DB) TenantsOf(ctx context.Context, kind store.ResourceKind, id string) (_ []string, err error) {
	defer wrap(&err, "TenantsOf")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	q, ok := tenantsOfQueries[kind]
	if !ok {
		return nil, fmt.Errorf("no resource kind %q", kind)
	}
	rows, err := db.pool.Query(ctx, q, id)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if ids == nil {
		ids = []string{}
	}
	return ids, err
}
