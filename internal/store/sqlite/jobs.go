package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// jobColumns are what every read of a job (scanJob) returns, the replay
// marks included.
const jobColumns = `id, tenant_id, subscription_id, event_sequence, event_id, status, attempts, next_attempt_at,
	recoveries, dead_letter_reason, last_error, enqueued_at, created_at, updated_at, completed_at,
	replayed_at, replayed_by, replayed_as`

// withEventType wraps q, a query of jobColumns ordered newest first with a
// LIMIT, so that each job also carries its event's type: a LEFT JOIN by the
// events' primary key, so a job whose event retention removed still lists.
// Read its rows with scanTypedJob.
func withEventType(q string) string {
	return `SELECT ` + prefixedColumns("j.") + `, e.event_type FROM (` + q + `) j
		LEFT JOIN events e ON e.tenant_id = j.tenant_id AND e.sequence = j.event_sequence
		ORDER BY j.id DESC`
}

func scanJob(row scanner) (hub.Job, error) { return scanJobAnd(row) }

// scanTypedJob reads a row of withEventType.
func scanTypedJob(row scanner) (hub.Job, error) {
	var t *string
	j, err := scanJobAnd(row, &t)
	if t != nil {
		j.EventType = *t
	}
	return j, err
}

// scanJobAnd reads a row of jobColumns followed by extra columns.
func scanJobAnd(row scanner, extra ...any) (hub.Job, error) {
	var j hub.Job
	var next, enq, created, updated int64
	var completed, replayedAt *int64
	var by, as *string
	err := row.Scan(append([]any{&j.ID, &j.TenantID, &j.SubscriptionID, &j.EventSequence, &j.EventID, &j.Status, &j.Attempts,
		&next, &j.Recoveries, &j.DeadLetterReason, &j.LastError, &enq, &created, &updated, &completed,
		&replayedAt, &by, &as}, extra...)...)
	j.NextAttemptAt, j.EnqueuedAt, j.CreatedAt, j.UpdatedAt = fromMicros(next), fromMicros(enq), fromMicros(created), fromMicros(updated)
	if completed != nil {
		t := fromMicros(*completed)
		j.CompletedAt = &t
	}
	if replayedAt != nil {
		t := fromMicros(*replayedAt)
		j.ReplayedAt = &t
	}
	if by != nil {
		j.ReplayedBy = *by
	}
	if as != nil {
		j.ReplayedAs = *as
	}
	return j, err
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func insertJobs(ctx context.Context, tx execer, jobs []hub.Job) error {
	for _, j := range jobs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO delivery_jobs (id, tenant_id, subscription_id, event_sequence,
			event_id, status, attempts, next_attempt_at, recoveries, dead_letter_reason, last_error, enqueued_at,
			created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			j.ID, j.TenantID, j.SubscriptionID, j.EventSequence, j.EventID, string(j.Status), j.Attempts,
			micros(j.NextAttemptAt), j.Recoveries, j.DeadLetterReason, j.LastError, micros(j.EnqueuedAt),
			micros(j.CreatedAt), micros(j.UpdatedAt)); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) ListJobs(ctx context.Context, p store.ListJobsParams) (_ []hub.Job, err error) {
	defer wrap(&err, "ListJobs")
	before := p.Before
	if before == "" {
		before = "\U0010FFFF"
	}
	rows, err := db.r.QueryContext(ctx, withEventType(`SELECT `+jobColumns+` FROM delivery_jobs
		WHERE subscription_id = ? AND tenant_id = ? AND (? = '' OR status = ?) AND id < ?
		ORDER BY id DESC LIMIT ?`),
		p.SubscriptionID, p.TenantID, string(p.Status), string(p.Status), before, store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return collect(rows, scanTypedJob)
}

func (db *DB) GetJob(ctx context.Context, tenantID, id string) (_ hub.Job, _ []hub.Attempt, err error) {
	defer wrap(&err, "GetJob")
	j, err := scanTypedJob(db.r.QueryRowContext(ctx, withEventType(`SELECT `+jobColumns+` FROM delivery_jobs WHERE id = ? AND tenant_id = ?`), id, tenantID))
	if err != nil {
		return hub.Job{}, nil, notFound(err, store.DeliveryNotFound, id)
	}
	rows, err := db.r.QueryContext(ctx, `SELECT id, job_id, started_at, duration_ms, status_code, error, response_body,
			request_headers, response_headers
		FROM delivery_attempts WHERE job_id = ? ORDER BY started_at, id`, id)
	if err != nil {
		return hub.Job{}, nil, err
	}
	attempts, err := collect(rows, func(r scanner) (hub.Attempt, error) {
		var a hub.Attempt
		var started, ms int64
		var reqH, respH *string
		err := r.Scan(&a.ID, &a.JobID, &started, &ms, &a.StatusCode, &a.Error, &a.ResponseBody, &reqH, &respH)
		a.StartedAt, a.Duration = fromMicros(started), time.Duration(ms)*time.Millisecond
		a.RequestHeaders, a.ResponseHeaders = store.DecodeHeaders(reqH), store.DecodeHeaders(respH)
		return a, err
	})
	return j, attempts, err
}

func replayable(ctx context.Context, tx *sql.Tx, tenantID, subscriptionID string) error {
	var enabled bool
	var deleted *int64
	err := tx.QueryRowContext(ctx, `SELECT enabled, deleted_at FROM subscriptions WHERE id = ? AND tenant_id = ?`,
		subscriptionID, tenantID).Scan(&enabled, &deleted)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return store.Replayable(subscriptionID, err == nil, enabled, deleted != nil)
}

func (db *DB) ReplayJob(ctx context.Context, tenantID, id, by string) (_ hub.Job, err error) {
	defer wrap(&err, "ReplayJob")
	now := db.opts.Stamp()
	var out hub.Job
	err = db.tx(ctx, func(tx *sql.Tx) error {
		j, err := scanJob(tx.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM delivery_jobs WHERE id = ? AND tenant_id = ?`, id, tenantID))
		if err != nil {
			return notFound(err, store.DeliveryNotFound, id)
		}
		if err := replayable(ctx, tx, tenantID, j.SubscriptionID); err != nil {
			return err
		}
		var eventType string
		err = tx.QueryRowContext(ctx, `SELECT event_type FROM events WHERE tenant_id = ? AND sequence = ?`,
			tenantID, j.EventSequence).Scan(&eventType)
		if errors.Is(err, sql.ErrNoRows) {
			return store.EventGone(j.EventID)
		}
		if err != nil {
			return err
		}
		out = store.Replay(j, now)
		out.EventType = eventType
		// Marked, so a later bulk replay does not send it once more, and
		// so it shows when, by whom and as what it was replayed.
		if _, err := tx.ExecContext(ctx, `UPDATE delivery_jobs SET replayed = 1, replayed_at = ?, replayed_by = ?, replayed_as = ?
			WHERE id = ?`, micros(now), by, out.ID, j.ID); err != nil {
			return err
		}
		return insertJobs(ctx, tx, []hub.Job{out})
	})
	return out, err
}

func (db *DB) ReplaySubscription(ctx context.Context, p store.ReplayParams) (_ store.ReplayResult, err error) {
	defer wrap(&err, "ReplaySubscription")
	now := db.opts.Stamp()
	var res store.ReplayResult
	err = db.tx(ctx, func(tx *sql.Tx) error {
		res = store.ReplayResult{}
		if err := replayable(ctx, tx, p.TenantID, p.SubscriptionID); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(replayed), 0) FROM delivery_jobs
			WHERE subscription_id = ? AND tenant_id = ? AND status = ? AND completed_at >= ?`,
			p.SubscriptionID, p.TenantID, string(p.Status), micros(p.Since)).Scan(&res.Matched, &res.AlreadyReplayed); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+prefixedColumns("j.")+`
			FROM delivery_jobs j JOIN events e ON e.tenant_id = j.tenant_id AND e.sequence = j.event_sequence
			WHERE j.subscription_id = ? AND j.tenant_id = ? AND j.status = ? AND j.completed_at >= ? AND j.replayed = 0
			ORDER BY j.event_sequence LIMIT ?`,
			p.SubscriptionID, p.TenantID, string(p.Status), micros(p.Since), store.MaxReplay)
		if err != nil {
			return err
		}
		olds, err := collect(rows, scanJob)
		if err != nil || len(olds) == 0 {
			return err
		}
		mark, err := tx.PrepareContext(ctx, `UPDATE delivery_jobs SET replayed = 1, replayed_at = ?1, replayed_by = ?2,
			replayed_as = ?3, updated_at = ?1 WHERE id = ?4`)
		if err != nil {
			return err
		}
		defer mark.Close()
		jobs := make([]hub.Job, len(olds))
		for i, j := range olds {
			jobs[i] = store.Replay(j, now)
			if _, err := mark.ExecContext(ctx, micros(now), p.By, jobs[i].ID, j.ID); err != nil {
				return err
			}
		}
		res.Replayed = len(jobs)
		return insertJobs(ctx, tx, jobs)
	})
	return res, err
}
