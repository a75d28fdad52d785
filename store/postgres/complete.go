package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/store"
)

var attemptColumns = []string{"id", "job_id", "started_at", "duration_ms", "status_code", "error", "response_body"}

// CompleteJobs writes a batch of results in one transaction: job states
// (fenced on their lease), the attempt log, the subscriptions' failure
// spans, and auto-disable.
func (db *DB) CompleteJobs(ctx context.Context, p store.CompleteParams) (store.CompleteResult, error) {
	if len(p.Completions) == 0 {
		return store.CompleteResult{}, nil
	}
	now := db.opts.Stamp()
	var res store.CompleteResult
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		res = store.CompleteResult{}
		n := len(p.Completions)
		ids, tokens, statuses, reasons, errs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		nexts := make([]time.Time, n)
		attempted := make([]bool, n)
		var attempts [][]any
		for i, c := range p.Completions {
			ids[i], tokens[i], statuses[i], reasons[i], errs[i] = c.JobID, c.LeaseToken, string(c.Status), c.DeadLetterReason, c.LastError
			nexts[i], attempted[i] = c.NextAttemptAt, c.Attempt != nil
			if nexts[i].IsZero() {
				nexts[i] = now
			}
			if a := c.Attempt; a != nil {
				attempts = append(attempts, []any{a.ID, c.JobID, a.StartedAt, a.Duration.Milliseconds(), a.StatusCode, a.Error, a.ResponseBody})
			}
		}
		rows, err := tx.Query(ctx, `UPDATE delivery_jobs d SET
				status = v.status, attempts = d.attempts + v.attempted::int, next_attempt_at = v.next_at,
				dead_letter_reason = v.reason, last_error = v.last_error,
				lease_token = NULL, lease_expires_at = NULL, updated_at = $8::timestamptz,
				completed_at = CASE WHEN v.status IN ('succeeded', 'dead_lettered') THEN $8::timestamptz END
			FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::bool[])
				AS v(id, token, status, next_at, reason, last_error, attempted)
			WHERE d.id = v.id AND d.lease_token = v.token AND d.status = 'in_flight'
			RETURNING d.id`, ids, tokens, statuses, nexts, reasons, errs, attempted, now)
		if err != nil {
			return err
		}
		written, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		res.Fenced = store.Fenced(p.Completions, written)
		// Attempts are logged even when fenced: the request was sent.
		if len(attempts) > 0 {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"delivery_attempts"}, attemptColumns, pgx.CopyFromRows(attempts)); err != nil {
				return err
			}
		}
		if err := db.updateSpans(ctx, tx, store.Spans(p.Completions)); err != nil {
			return err
		}
		if p.AutoDisable != nil {
			res.Disabled, err = db.autoDisable(ctx, tx, store.Failing(p.Completions), *p.AutoDisable, now)
		}
		return err
	})
	return res, err
}

// updateSpans moves failure spans: a success resets a span to the failures
// after it (often none); failures alone extend it. Healthy subscriptions
// are not written at all.
func (db *DB) updateSpans(ctx context.Context, tx pgx.Tx, spans []store.SpanUpdate) error {
	if len(spans) == 0 {
		return nil
	}
	var ids []string
	var resets []bool
	var firsts, lasts []*time.Time
	for _, s := range spans {
		ids, resets = append(ids, s.SubscriptionID), append(resets, s.Reset)
		firsts, lasts = append(firsts, s.First), append(lasts, s.Last)
	}
	_, err := tx.Exec(ctx, `UPDATE subscriptions s SET
			failure_first_at = CASE WHEN v.reset THEN v.first ELSE coalesce(s.failure_first_at, v.first) END,
			failure_last_at = CASE WHEN v.reset THEN v.last ELSE greatest(s.failure_last_at, v.last) END,
			version = s.version + 1
		FROM unnest($1::text[], $2::bool[], $3::timestamptz[], $4::timestamptz[]) AS v(id, reset, first, last)
		WHERE s.id = v.id AND (NOT v.reset OR s.failure_first_at IS DISTINCT FROM v.first OR s.failure_last_at IS DISTINCT FROM v.last)`,
		ids, resets, firsts, lasts)
	return err
}

// autoDisable turns off subscriptions whose open failure span is both
// sustained and spread, and dead-letters their pending jobs.
func (db *DB) autoDisable(ctx context.Context, tx pgx.Tx, failing []string, g store.AutoDisable, now time.Time) ([]string, error) {
	if len(failing) == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, `UPDATE subscriptions SET enabled = false, disabled_at = $2::timestamptz, version = version + 1,
			disabled_reason = 'auto-disabled: failing since ' || to_char(failure_first_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
				|| ', last failure ' || to_char(failure_last_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
		WHERE id = ANY($1) AND enabled AND deleted_at IS NULL
		  AND failure_first_at <= $2::timestamptz - $3::interval AND failure_last_at - failure_first_at >= $4::interval
		RETURNING id`, failing, now, interval(g.Window), interval(g.Spread))
	if err != nil {
		return nil, err
	}
	disabled, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(disabled) == 0 {
		return nil, err
	}
	return disabled, deadLetterPending(ctx, tx, disabled, hub.DeadLetterSubscriptionDisabled, now)
}

func interval(d time.Duration) string { return fmt.Sprintf("%d microseconds", d.Microseconds()) }
