package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

var histogramColumns = func() []string {
	out := make([]string, store.LatencyBuckets)
	for i := range out {
		out[i] = fmt.Sprintf("h%d", i)
	}
	return out
}()

var upsertRollup = func() string {
	var add []string
	for _, c := range histogramColumns {
		add = append(add, fmt.Sprintf("%s = %s + excluded.%s", c, c, c))
	}
	return `INSERT INTO subscription_rollups (subscription_id, bucket_start, successes, failures, ` +
		strings.Join(histogramColumns, ", ") + `, last_success_at, last_failure_at, last_error)
	VALUES (?, ?, ?, ?, ` + placeholders(store.LatencyBuckets) + `, ?, ?, ?)
	ON CONFLICT (subscription_id, bucket_start) DO UPDATE SET
		successes = successes + excluded.successes, failures = failures + excluded.failures, ` +
		strings.Join(add, ", ") + `,
		last_success_at = max(coalesce(last_success_at, excluded.last_success_at), coalesce(excluded.last_success_at, last_success_at)),
		last_error = CASE WHEN excluded.last_failure_at IS NOT NULL
			AND (last_failure_at IS NULL OR excluded.last_failure_at >= last_failure_at)
			THEN excluded.last_error ELSE last_error END,
		last_failure_at = max(coalesce(last_failure_at, excluded.last_failure_at), coalesce(excluded.last_failure_at, last_failure_at))`
}()

// writeRollups adds a batch's attempts to their subscriptions' health
// rollups, in the completion transaction.
func writeRollups(ctx context.Context, tx *sql.Tx, rs []store.Rollup) error {
	for _, r := range rs {
		args := []any{r.SubscriptionID, micros(r.Start), r.Successes, r.Failures}
		for _, c := range r.Latency {
			args = append(args, c)
		}
		args = append(args, optMicros(r.LastSuccessAt), optMicros(r.LastFailureAt), r.LastError)
		if _, err := tx.ExecContext(ctx, upsertRollup, args...); err != nil {
			return err
		}
	}
	return nil
}

func optTime(us *int64) *time.Time {
	if us == nil {
		return nil
	}
	t := fromMicros(*us)
	return &t
}

// rollupColumns are a subscription's rollup row as scanRollup reads it.
var rollupColumns = `subscription_id, bucket_start, successes, failures, ` +
	strings.Join(histogramColumns, ", ") + `, last_success_at, last_failure_at, last_error`

// hubRollupColumns are rollupColumns summed over every subscription of a
// bucket (GROUP BY bucket_start): no subscription and no error of its own.
var hubRollupColumns = func() string {
	sums := make([]string, len(histogramColumns))
	for i, c := range histogramColumns {
		sums[i] = "sum(" + c + ")"
	}
	return `'', bucket_start, sum(successes), sum(failures), ` +
		strings.Join(sums, ", ") + `, max(last_success_at), max(last_failure_at), ''`
}()

func (db *DB) ListRollups(ctx context.Context, subscriptionID string, from time.Time) (_ []store.Rollup, err error) {
	defer wrap(&err, "ListRollups")
	return db.queryRollups(ctx, `SELECT `+rollupColumns+`
		FROM subscription_rollups WHERE subscription_id = ? AND bucket_start >= ? ORDER BY bucket_start`,
		subscriptionID, micros(from))
}

func (db *DB) ListHubRollups(ctx context.Context, from time.Time) (_ []store.Rollup, err error) {
	defer wrap(&err, "ListHubRollups")
	return db.queryRollups(ctx, `SELECT `+hubRollupColumns+`
		FROM subscription_rollups WHERE bucket_start >= ? GROUP BY bucket_start ORDER BY bucket_start`, micros(from))
}

// queryRollups runs query, which selects rollupColumns or
// hubRollupColumns, and scans its rows.
func (db *DB) queryRollups(ctx context.Context, query string, args ...any) ([]store.Rollup, error) {
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanRollup)
}

// scanRollup reads a row of rollupColumns (or hubRollupColumns).
func scanRollup(row scanner) (store.Rollup, error) {
	var r store.Rollup
	var start int64
	var ok, fail *int64
	dest := []any{&r.SubscriptionID, &start, &r.Successes, &r.Failures}
	for i := range r.Latency {
		dest = append(dest, &r.Latency[i])
	}
	dest = append(dest, &ok, &fail, &r.LastError)
	err := row.Scan(dest...)
	r.Start, r.LastSuccessAt, r.LastFailureAt = fromMicros(start), optTime(ok), optTime(fail)
	return r, err
}

func (db *DB) Backlog(ctx context.Context, subscriptionID string) (_ map[hub.JobStatus]int64, err error) {
	defer wrap(&err, "Backlog")
	var pending, inFlight, dead int64
	err = db.r.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM delivery_jobs WHERE subscription_id = ?1 AND status = 'pending'),
		(SELECT count(*) FROM delivery_jobs WHERE subscription_id = ?1 AND status = 'in_flight'),
		(SELECT count(*) FROM delivery_jobs WHERE subscription_id = ?1 AND status = 'dead_lettered')`,
		subscriptionID).Scan(&pending, &inFlight, &dead)
	return store.JobCounts(pending, inFlight, dead), err
}

func (db *DB) PruneRollups(ctx context.Context, before time.Time) (_ int, err error) {
	defer wrap(&err, "PruneRollups")
	res, err := db.w.ExecContext(ctx, `DELETE FROM subscription_rollups WHERE bucket_start < ?`, micros(before))
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// noteTypes records the batch's (tenant, type, major) in the catalog,
// rewriting a row only when its source changed or its last_seen_at is more
// than a minute old.
func noteTypes(ctx context.Context, tx *sql.Tx, events []hub.Event, outcomes []store.Outcome, now int64) error {
	for _, s := range store.TypesSeen(events, outcomes, fromMicros(now)) {
		if _, err := tx.ExecContext(ctx, `INSERT INTO event_types_seen (tenant_id, event_type, schema_major, source, first_seen_at, last_seen_at)
			VALUES (?1, ?2, ?3, ?4, ?5, ?5)
			ON CONFLICT (tenant_id, event_type, schema_major) DO UPDATE SET source = excluded.source, last_seen_at = excluded.last_seen_at
			WHERE source <> excluded.source OR last_seen_at < excluded.last_seen_at - ?6`,
			s.TenantID, s.EventType, s.SchemaMajor, s.Source, now, store.KeyTouchInterval.Microseconds()); err != nil {
			return err
		}
	}
	return nil
}

// writeStats writes gathered statistics: types seen (keeping each one's
// first sighting) and rollups.
func writeStats(ctx context.Context, tx *sql.Tx, s store.Stats) error {
	for _, t := range s.Types {
		if _, err := tx.ExecContext(ctx, `INSERT INTO event_types_seen (tenant_id, event_type, schema_major, source, first_seen_at, last_seen_at)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6)
			ON CONFLICT (tenant_id, event_type, schema_major) DO UPDATE SET source = excluded.source,
				last_seen_at = max(last_seen_at, excluded.last_seen_at)
			WHERE source <> excluded.source OR last_seen_at < excluded.last_seen_at`,
			t.TenantID, t.EventType, t.SchemaMajor, t.Source, micros(t.FirstSeenAt), micros(t.LastSeenAt)); err != nil {
			return err
		}
	}
	return writeRollups(ctx, tx, s.Rollups)
}

func (db *DB) ListTypesSeen(ctx context.Context, tenantID string) (_ []store.TypeSeen, err error) {
	defer wrap(&err, "ListTypesSeen")
	rows, err := db.r.QueryContext(ctx, `SELECT tenant_id, event_type, schema_major, source, first_seen_at, last_seen_at
		FROM event_types_seen WHERE tenant_id = ? ORDER BY event_type, schema_major`, tenantID)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r scanner) (store.TypeSeen, error) {
		var t store.TypeSeen
		var first, last int64
		err := r.Scan(&t.TenantID, &t.EventType, &t.SchemaMajor, &t.Source, &first, &last)
		t.FirstSeenAt, t.LastSeenAt = fromMicros(first), fromMicros(last)
		return t, err
	})
}

func (db *DB) RecordManifestFetch(ctx context.Context, url string, at time.Time, manifest []byte, fetchErr string) (err error) {
	defer wrap(&err, "RecordManifestFetch")
	if manifest != nil {
		_, err = db.w.ExecContext(ctx, `INSERT INTO manifest_sources (url, manifest, last_fetched_at, last_success_at, last_error)
			VALUES (?1, ?2, ?3, ?3, '') ON CONFLICT (url) DO UPDATE SET manifest = excluded.manifest,
			last_fetched_at = excluded.last_fetched_at, last_success_at = excluded.last_success_at, last_error = ''`,
			url, manifest, micros(at))
		return err
	}
	_, err = db.w.ExecContext(ctx, `INSERT INTO manifest_sources (url, last_fetched_at, last_error) VALUES (?, ?, ?)
		ON CONFLICT (url) DO UPDATE SET last_fetched_at = excluded.last_fetched_at, last_error = excluded.last_error`,
		url, micros(at), store.CleanText(fetchErr, 1024))
	return err
}

func (db *DB) ListManifests(ctx context.Context) (_ []store.ManifestSource, err error) {
	defer wrap(&err, "ListManifests")
	rows, err := db.r.QueryContext(ctx, `SELECT url, manifest, last_fetched_at, last_success_at, last_error
		FROM manifest_sources ORDER BY url`)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r scanner) (store.ManifestSource, error) {
		var m store.ManifestSource
		var fetched, ok *int64
		err := r.Scan(&m.URL, &m.Manifest, &fetched, &ok, &m.LastError)
		m.LastFetchedAt, m.LastSuccessAt = optTime(fetched), optTime(ok)
		return m, err
	})
}

func (db *DB) GetEvent(ctx context.Context, tenantID, ceID string) (_ hub.Event, _ []hub.Job, err error) {
	defer wrap(&err, "GetEvent")
	ev, err := scanEvent(db.r.QueryRowContext(ctx, `SELECT `+eventSelect+` FROM events WHERE tenant_id = ? AND ce_id = ?`, tenantID, ceID))
	if err != nil {
		return hub.Event{}, nil, notFound(err, store.EventNotFound, ceID)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+jobColumns+` FROM delivery_jobs
		WHERE tenant_id = ? AND event_id = ? ORDER BY id DESC LIMIT 1000`, tenantID, ceID)
	if err != nil {
		return hub.Event{}, nil, err
	}
	jobs, err := collect(rows, scanJob)
	for i := range jobs {
		jobs[i].EventType = ev.EventType // all of them this event's jobs: no join needed
	}
	return ev, jobs, err
}

// SearchJobs: see the PostgreSQL driver; the same indexes serve it.
func (db *DB) SearchJobs(ctx context.Context, p store.SearchJobsParams) (_ []hub.Job, err error) {
	defer wrap(&err, "SearchJobs")
	before, low, limit := p.IDRange()
	var since, until any
	if !p.Since.IsZero() {
		since = micros(p.Since)
	}
	if !p.Until.IsZero() {
		until = micros(p.Until)
	}
	filter := `(?2 = '' OR j.status = ?2) AND j.id < ?3 AND j.id >= ?4
		AND (?5 IS NULL OR j.created_at >= ?5) AND (?6 IS NULL OR j.created_at < ?6)`
	args := []any{p.TenantID, string(p.Status), before, low, since, until, limit}
	cols := prefixedColumns("j.")
	var q string
	switch {
	case p.EventID != "":
		q = `SELECT ` + cols + ` FROM delivery_jobs j WHERE j.tenant_id = ?1 AND ` + filter +
			` AND j.event_id = ?8 AND (?9 = '' OR j.subscription_id = ?9) ORDER BY j.id DESC LIMIT ?7`
		args = append(args, p.EventID, p.SubscriptionID)
	case p.SubscriptionID != "":
		q = `SELECT ` + cols + ` FROM delivery_jobs j INDEXED BY delivery_jobs_subscription WHERE ` + filter +
			` AND j.subscription_id = ?8 AND ?8 IN (SELECT id FROM subscriptions WHERE tenant_id = ?1) ORDER BY j.id DESC LIMIT ?7`
		args = append(args, p.SubscriptionID)
	default:
		// SQLite has no LATERAL: the subscription index, with the tenant's
		// subscriptions as the outer loop.
		q = `SELECT ` + cols + ` FROM delivery_jobs j INDEXED BY delivery_jobs_subscription
			WHERE j.subscription_id IN (SELECT id FROM subscriptions WHERE tenant_id = ?1) AND ` + filter +
			` ORDER BY j.id DESC LIMIT ?7`
	}
	rows, err := db.r.QueryContext(ctx, withEventType(q), args...)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanTypedJob)
}

func prefixedColumns(alias string) string {
	parts := strings.Split(jobColumns, ",")
	for i, p := range parts {
		parts[i] = alias + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

func (db *DB) ListAPIKeys(ctx context.Context, tenantID string) (_ []hub.APIKey, err error) {
	defer wrap(&err, "ListAPIKeys")
	rows, err := db.r.QueryContext(ctx, `SELECT id, tenant_id, created_at, last_used_at FROM api_keys WHERE tenant_id = ? ORDER BY id`, tenantID)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r scanner) (hub.APIKey, error) {
		var k hub.APIKey
		var created int64
		var used *int64
		err := r.Scan(&k.ID, &k.TenantID, &created, &used)
		k.CreatedAt, k.LastUsedAt = fromMicros(created), optTime(used)
		return k, err
	})
}

func (db *DB) TouchAPIKey(ctx context.Context, id string, at time.Time) (err error) {
	defer wrap(&err, "TouchAPIKey")
	_, err = db.w.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ?2
		WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at <= ?3)`, id, micros(at), micros(at.Add(-store.KeyTouchInterval)))
	return err
}

// report writes, in tx, the operational events of what it changed: read
// what they say, then admit and match them as ingest does.
func (db *DB) report(ctx context.Context, tx *sql.Tx, r store.Report, now int64) error {
	if r.Empty() {
		return nil
	}
	disabled, err := subscriptionStates(ctx, tx, r.Disabled)
	if err != nil {
		return err
	}
	recovered, err := subscriptionStates(ctx, tx, r.Recovered)
	if err != nil {
		return err
	}
	var dead []store.DeadLetterState
	for start := 0; start < len(r.DeadLettered); start += 500 {
		ids := r.DeadLettered[start:min(len(r.DeadLettered), start+500)]
		rows, err := tx.QueryContext(ctx, `SELECT j.id, j.tenant_id, j.subscription_id, j.event_id,
			coalesce(e.event_type, ''), coalesce(e.ce_type, ''), j.dead_letter_reason, j.last_error, j.attempts
			FROM delivery_jobs j LEFT JOIN events e ON e.tenant_id = j.tenant_id AND e.sequence = j.event_sequence
			WHERE j.id IN (`+placeholders(len(ids))+`) ORDER BY j.id`, anys(ids)...)
		if err != nil {
			return err
		}
		part, err := collect(rows, func(row scanner) (store.DeadLetterState, error) {
			var d store.DeadLetterState
			return d, row.Scan(&d.JobID, &d.TenantID, &d.SubscriptionID, &d.EventID, &d.EventType, &d.CEType,
				&d.Reason, &d.LastError, &d.Attempts)
		})
		if err != nil {
			return err
		}
		dead = append(dead, part...)
	}
	events := store.OperationalEvents(disabled, recovered, dead, fromMicros(now))
	if len(events) == 0 {
		return nil
	}
	outcomes, err := db.admit(ctx, tx, events, now)
	if err != nil {
		return err
	}
	// The catalog's last seen, as ingest and EmitOperational record it:
	// without it the event types page showed the hub's own types as never
	// seen though the events page listed them.
	if err := noteTypes(ctx, tx, events, outcomes, now); err != nil {
		return err
	}
	_, _, err = match(ctx, tx, events, store.AcceptedTenants(events, outcomes), outcomes, fromMicros(now))
	return err
}

func subscriptionStates(ctx context.Context, tx *sql.Tx, ids []string) ([]store.SubscriptionState, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, tenant_id, name, disabled_reason, disabled_at FROM subscriptions
		WHERE id IN (`+placeholders(len(ids))+`) ORDER BY id`, anys(ids)...)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r scanner) (store.SubscriptionState, error) {
		var s store.SubscriptionState
		var at *int64
		err := r.Scan(&s.ID, &s.TenantID, &s.Name, &s.DisabledReason, &at)
		s.DisabledAt = optTime(at)
		return s, err
	})
}

// deadLetterPendingIDs dead-letters a subscription's pending jobs and
// returns their ids, for report.
func deadLetterPendingIDs(ctx context.Context, tx *sql.Tx, subscriptionID, reason string, now int64) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `UPDATE delivery_jobs SET status = 'dead_lettered', dead_letter_reason = ?,
		completed_at = ?, updated_at = ? WHERE subscription_id = ? AND status = 'pending' RETURNING id`, reason, now, now, subscriptionID)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r scanner) (string, error) {
		var id string
		return id, r.Scan(&id)
	})
}

// tenantsOfQueries find a resource's tenants by its id, each from an
// index: the jobs' and subscriptions' primary keys; for a ce-id, the
// (tenant, ce_id) index probed once a tenant.
var tenantsOfQueries = map[store.ResourceKind]string{
	store.ResourceDelivery:     `SELECT tenant_id FROM delivery_jobs WHERE id = ?`,
	store.ResourceSubscription: `SELECT tenant_id FROM subscriptions WHERE id = ? AND deleted_at IS NULL`,
	store.ResourceEvent: `SELECT t.id FROM tenants t
		WHERE EXISTS (SELECT 1 FROM events e WHERE e.tenant_id = t.id AND e.ce_id = ?) ORDER BY t.id LIMIT 100`,
}

func (db *DB) TenantsOf(ctx context.Context, kind store.ResourceKind, id string) (_ []string, err error) {
	defer wrap(&err, "TenantsOf")
	q, ok := tenantsOfQueries[kind]
	if !ok {
		return nil, fmt.Errorf("no resource kind %q", kind)
	}
	rows, err := db.r.QueryContext(ctx, q, id)
	if err != nil {
		return nil, err
	}
	ids, err := collect(rows, func(r scanner) (string, error) {
		var id string
		return id, r.Scan(&id)
	})
	if ids == nil {
		ids = []string{}
	}
	return ids, err
}
