package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// jobColumns are what a claim returns of a job; jobReadColumns, what
// reads (scanJob) return: the replay marks too.
const (
	jobColumns = `id, tenant_id, subscription_id, event_sequence, event_id, status, attempts, next_attempt_at,
	recoveries, dead_letter_reason, last_error, enqueued_at, created_at, updated_at, completed_at`
	jobReadColumns = jobColumns + `, replayed_at, replayed_by, replayed_as`
)

var jobCopyColumns = []string{
	"id", "tenant_id", "subscription_id", "event_sequence", "event_id", "status", "attempts", "next_attempt_at",
	"recoveries", "dead_letter_reason", "last_error", "enqueued_at", "created_at", "updated_at",
}

// withEventType wraps q, a query of jobReadColumns ordered newest first
// with a LIMIT, so that each job also carries its event's type: a LEFT
// JOIN, so a job whose event retention removed still lists. LATERAL keeps
// it a probe of each events partition's primary key by (tenant_id,
// sequence) per job of the page: a plain join of a few thousand events is
// planned as a hash join that reads them all. Read its rows with
// scanTypedJob.
func withEventType(q string) string {
	return `SELECT ` + prefixed("j.", jobReadColumns) + `, e.event_type FROM (` + q + `) j
		LEFT JOIN LATERAL (SELECT event_type FROM events
			WHERE tenant_id = j.tenant_id AND sequence = j.event_sequence LIMIT 1) e ON true
		ORDER BY j.id DESC`
}

// scanJob reads a row of jobReadColumns.
func scanJob(row pgx.Row) (hub.Job, error) { return scanJobAnd(row) }

// scanTypedJob reads a row of withEventType.
func scanTypedJob(row pgx.Row) (hub.Job, error) {
	var t *string
	j, err := scanJobAnd(row, &t)
	if t != nil {
		j.EventType = *t
	}
	return j, err
}

func collectTypedJobs(rows pgx.Rows, err error) ([]hub.Job, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Job, error) { return scanTypedJob(r) })
}

// scanJobAnd reads a row of jobReadColumns followed by extra columns.
func scanJobAnd(row pgx.Row, extra ...any) (hub.Job, error) {
	var j hub.Job
	var by, as *string
	err := row.Scan(append([]any{&j.ID, &j.TenantID, &j.SubscriptionID, &j.EventSequence, &j.EventID, &j.Status, &j.Attempts,
		&j.NextAttemptAt, &j.Recoveries, &j.DeadLetterReason, &j.LastError, &j.EnqueuedAt, &j.CreatedAt,
		&j.UpdatedAt, &j.CompletedAt, &j.ReplayedAt, &by, &as}, extra...)...)
	j.NextAttemptAt, j.EnqueuedAt, j.CreatedAt, j.UpdatedAt = j.NextAttemptAt.UTC(), j.EnqueuedAt.UTC(), j.CreatedAt.UTC(), j.UpdatedAt.UTC()
	for _, t := range []**time.Time{&j.CompletedAt, &j.ReplayedAt} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	if by != nil {
		j.ReplayedBy = *by
	}
	if as != nil {
		j.ReplayedAs = *as
	}
	return j, err
}

func collectJobs(rows pgx.Rows, err error) ([]hub.Job, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Job, error) { return scanJob(r) })
}

func jobRow(j hub.Job) []any {
	return []any{j.ID, j.TenantID, j.SubscriptionID, j.EventSequence, j.EventID, string(j.Status), j.Attempts,
		j.NextAttemptAt, j.Recoveries, j.DeadLetterReason, j.LastError, j.EnqueuedAt, j.CreatedAt, j.UpdatedAt}
}

func copyJobs(ctx context.Context, tx pgxtx, jobs []hub.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	rows := make([][]any, len(jobs))
	for i, j := range jobs {
		rows[i] = jobRow(j)
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"delivery_jobs"}, jobCopyColumns, pgx.CopyFromRows(rows))
	return err
}

// deadLetterPendingSQL dead-letters the pending jobs of subscriptions $1
// with reason $2 at $3, returning their ids (for store.Report).
const deadLetterPendingSQL = `UPDATE delivery_jobs SET status = 'dead_lettered', dead_letter_reason = $2,
	completed_at = $3, updated_at = $3 WHERE subscription_id = ANY($1) AND status = 'pending' RETURNING id`

// deadLetterPending dead-letters subscriptions' pending jobs and returns
// their ids.
func deadLetterPending(ctx context.Context, tx pgxtx, subscriptionIDs []string, reason string, now time.Time) ([]string, error) {
	rows, err := tx.Query(ctx, deadLetterPendingSQL, subscriptionIDs, reason, now)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// listJobsSQL pages subscription $1's jobs of tenant $2 with status $3
// (” for any) before id $4, $5 of them; getJobSQL reads job $1 of tenant
// $2. Both with their events' types.
var (
	listJobsSQL = withEventType(`SELECT ` + jobReadColumns + ` FROM delivery_jobs
		WHERE subscription_id = $1 AND tenant_id = $2 AND ($3 = '' OR status = $3) AND id < $4
		ORDER BY id DESC LIMIT $5`)
	getJobSQL = withEventType(`SELECT ` + jobReadColumns + ` FROM delivery_jobs WHERE id = $1 AND tenant_id = $2`)
)

func (db *DB) ListJobs(ctx context.Context, p store.ListJobsParams) (_ []hub.Job, err error) {
	defer wrap(&err, "ListJobs")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	before := p.Before
	if before == "" {
		before = "\U0010FFFF"
	}
	return collectTypedJobs(db.pool.Query(ctx, listJobsSQL,
		p.SubscriptionID, p.TenantID, string(p.Status), before, store.ClampLimit(p.Limit, 50, 1000)))
}

func (db *DB) GetJob(ctx context.Context, tenantID, id string) (_ hub.Job, _ []hub.Attempt, err error) {
	defer wrap(&err, "GetJob")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	j, err := scanTypedJob(db.pool.QueryRow(ctx, getJobSQL, id, tenantID))
	if err != nil {
		return hub.Job{}, nil, notFound(err, store.DeliveryNotFound, id)
	}
	rows, err := db.pool.Query(ctx, `SELECT id, job_id, started_at, duration_ms, status_code, error, response_body,
			request_headers, response_headers
		FROM delivery_attempts WHERE job_id = $1 ORDER BY started_at, id`, id)
	if err != nil {
		return hub.Job{}, nil, err
	}
	attempts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Attempt, error) {
		var a hub.Attempt
		var ms int64
		var reqH, respH *string
		err := r.Scan(&a.ID, &a.JobID, &a.StartedAt, &ms, &a.StatusCode, &a.Error, &a.ResponseBody, &reqH, &respH)
		a.Duration, a.StartedAt = time.Duration(ms)*time.Millisecond, a.StartedAt.UTC()
		a.RequestHeaders, a.ResponseHeaders = store.DecodeHeaders(reqH), store.DecodeHeaders(respH)
		return a, err
	})
	return j, attempts, err
}

// replayable checks that a subscription can take a fresh job.
func replayable(ctx context.Context, tx pgx.Tx, tenantID, subscriptionID string) error {
	var enabled bool
	var deleted *time.Time
	err := tx.QueryRow(ctx, `SELECT enabled, deleted_at FROM subscriptions WHERE id = $1 AND tenant_id = $2`,
		subscriptionID, tenantID).Scan(&enabled, &deleted)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	return store.Replayable(subscriptionID, err == nil, enabled, deleted != nil)
}

func (db *DB) ReplayJob(ctx context.Context, tenantID, id, by string) (_ hub.Job, err error) {
	defer wrap(&err, "ReplayJob")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	now := db.opts.Stamp()
	var out hub.Job
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		j, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobReadColumns+` FROM delivery_jobs WHERE id = $1 AND tenant_id = $2`, id, tenantID))
		if err != nil {
			return notFound(err, store.DeliveryNotFound, id)
		}
		if err := replayable(ctx, tx, tenantID, j.SubscriptionID); err != nil {
			return err
		}
		// The share lock keeps retention from deleting the event until the
		// new job, which needs it, is committed.
		var eventType string
		err = tx.QueryRow(ctx, `SELECT event_type FROM events WHERE tenant_id = $1 AND sequence = $2 FOR SHARE`,
			tenantID, j.EventSequence).Scan(&eventType)
		if errors.Is(err, pgx.ErrNoRows) {
			return store.EventGone(j.EventID)
		}
		if err != nil {
			return err
		}
		out = store.Replay(j, now)
		out.EventType = eventType
		// Marked, so a later bulk replay does not send it once more, and
		// so it shows when, by whom and as what it was replayed.
		if _, err := tx.Exec(ctx, `UPDATE delivery_jobs SET replayed = true, replayed_at = $2, replayed_by = $3, replayed_as = $4
			WHERE id = $1`, j.ID, now, by, out.ID); err != nil {
			return err
		}
		return copyJobs(ctx, tx, []hub.Job{out})
	})
	return out, err
}

func (db *DB) ReplaySubscription(ctx context.Context, p store.ReplayParams) (_ store.ReplayResult, err error) {
	defer wrap(&err, "ReplaySubscription")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	now := db.opts.Stamp()
	var res store.ReplayResult
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		res = store.ReplayResult{}
		if err := replayable(ctx, tx, p.TenantID, p.SubscriptionID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE replayed) FROM delivery_jobs
			WHERE subscription_id = $1 AND tenant_id = $2 AND status = $3 AND completed_at >= $4`,
			p.SubscriptionID, p.TenantID, string(p.Status), p.Since).Scan(&res.Matched, &res.AlreadyReplayed); err != nil {
			return err
		}
		olds, err := collectJobs(tx.Query(ctx, `SELECT `+prefixed("j.", jobReadColumns)+`
			FROM delivery_jobs j JOIN events e ON e.tenant_id = j.tenant_id AND e.sequence = j.event_sequence
			WHERE j.subscription_id = $1 AND j.tenant_id = $2 AND j.status = $3 AND j.completed_at >= $4 AND NOT j.replayed
			ORDER BY j.event_sequence LIMIT $5 FOR UPDATE OF j FOR SHARE OF e`,
			p.SubscriptionID, p.TenantID, string(p.Status), p.Since, store.MaxReplay))
		if err != nil || len(olds) == 0 {
			return err
		}
		jobs := make([]hub.Job, len(olds))
		ids, news := make([]string, len(olds)), make([]string, len(olds))
		for i, j := range olds {
			jobs[i] = store.Replay(j, now)
			ids[i], news[i] = j.ID, jobs[i].ID
		}
		if _, err := tx.Exec(ctx, `UPDATE delivery_jobs d SET replayed = true, replayed_at = $3, replayed_by = $4,
				replayed_as = v.replayed_as, updated_at = $3
			FROM unnest($1::text[], $2::text[]) AS v(id, replayed_as) WHERE d.id = v.id`, ids, news, now, p.By); err != nil {
			return err
		}
		res.Replayed = len(jobs)
		return copyJobs(ctx, tx, jobs)
	})
	return res, err
}
