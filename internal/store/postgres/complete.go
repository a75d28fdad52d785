package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// CompleteJobs writes a batch of results in one round trip: BEGIN, the
// statements and COMMIT go as one pipelined batch. Job states are fenced on their lease; the attempt log,
// failure spans and auto-disable follow.
func (db *DB) CompleteJobs(ctx context.Context, p store.CompleteParams) (store.CompleteResult, error) {
	if len(p.Completions) == 0 {
		return store.CompleteResult{}, nil
	}
	now := db.opts.Stamp()
	n := len(p.Completions)
	ids, tokens, statuses, reasons, errs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	nexts := make([]time.Time, n)
	attempted := make([]bool, n)
	var a attemptArrays
	for i, c := range p.Completions {
		ids[i], tokens[i], statuses[i], reasons[i], errs[i] = c.JobID, c.LeaseToken, string(c.Status), c.DeadLetterReason, c.LastError
		nexts[i], attempted[i] = c.NextAttemptAt, c.Attempt != nil
		if nexts[i].IsZero() {
			nexts[i] = now
		}
		if c.Attempt != nil {
			a.add(c.JobID, c.Attempt)
		}
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(asyncCommit)
	b.Queue(orderedScans)
	b.Queue(lockSubscriptions, store.SubscriptionsOf(p.Completions))
	b.Queue(fmt.Sprintf(uncount, `UPDATE delivery_jobs d SET
			status = v.status, attempts = d.attempts + v.attempted::int, next_attempt_at = v.next_at,
			dead_letter_reason = v.reason, last_error = v.last_error,
			lease_token = NULL, lease_expires_at = NULL, updated_at = $8::timestamptz,
			completed_at = CASE WHEN v.status IN ('succeeded', 'dead_lettered') THEN $8::timestamptz END
		FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::bool[])
			AS v(id, token, status, next_at, reason, last_error, attempted)
		WHERE d.id = v.id AND d.lease_token = v.token AND d.status IS NOT DISTINCT FROM 'in_flight'`), ids, tokens, statuses, nexts, reasons, errs, attempted, now)
	if len(a.ids) > 0 {
		// Logged even when fenced: the request was sent.
		b.Queue(`INSERT INTO delivery_attempts (id, job_id, started_at, duration_ms, status_code, error, response_body)
			SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::text[])`,
			a.ids, a.jobs, a.started, a.ms, a.status, a.errs, a.bodies)
	}
	if spans := store.Spans(p.Completions); len(spans) > 0 {
		queueSpans(b, spans)
	}
	failing := store.Failing(p.Completions)
	autoDisable := p.AutoDisable != nil && len(failing) > 0
	if autoDisable {
		queueAutoDisable(b, failing, *p.AutoDisable, now)
	}
	token := hub.NewID("lease", now)
	if p.Next != nil {
		// The subscriptions are locked already (by this transaction): the
		// claim's own lock on them succeeds at once, and it reads their
		// counts as just lowered.
		b.Queue(claimSome, now, p.Next.Batch, token, now.Add(p.Next.Lease), store.NextTargets(p.Completions, p.Next.Subscriptions))
	}
	b.Queue("COMMIT")

	br := db.pool.SendBatch(ctx, b)
	defer br.Close()
	var res store.CompleteResult
	for range 4 { // BEGIN, the two SETs, the locks
		if _, err := br.Exec(); err != nil {
			return res, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		return res, err
	}
	var written []string
	for rows.Next() {
		var id, status string
		if err := rows.Scan(&id, &status); err != nil {
			return res, err
		}
		written = append(written, id)
	}
	if err := rows.Err(); err != nil {
		return res, err
	}
	res.Fenced = store.Fenced(p.Completions, written)
	// After BEGIN, SET, the locks and the update; before the optional
	// auto-disable and claim, and COMMIT.
	for range b.Len() - 6 - boolInt(autoDisable) - boolInt(p.Next != nil) {
		if _, err := br.Exec(); err != nil {
			return store.CompleteResult{}, err
		}
	}
	if autoDisable {
		rows, err := br.Query()
		if err != nil {
			return store.CompleteResult{}, err
		}
		if res.Disabled, err = pgx.CollectRows(rows, pgx.RowToStructByPos[store.Disabled]); err != nil {
			return store.CompleteResult{}, err
		}
	}
	if p.Next != nil {
		rows, err := br.Query()
		if err != nil {
			return store.CompleteResult{}, err
		}
		if res.Claimed, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Claimed, error) { return scanClaimed(r, token) }); err != nil {
			return store.CompleteResult{}, err
		}
	}
	if _, err := br.Exec(); err != nil { // COMMIT
		return store.CompleteResult{}, err
	}
	return res, br.Close()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// attemptArrays are attempts as column arrays, for one INSERT from unnest.
type attemptArrays struct {
	ids, jobs, errs, bodies []string
	started                 []time.Time
	ms, status              []int32
}

func (a *attemptArrays) add(jobID string, at *hub.Attempt) {
	a.ids, a.jobs = append(a.ids, at.ID), append(a.jobs, jobID)
	a.started = append(a.started, at.StartedAt)
	a.ms, a.status = append(a.ms, int32(at.Duration.Milliseconds())), append(a.status, int32(at.StatusCode))
	a.errs, a.bodies = append(a.errs, at.Error), append(a.bodies, at.ResponseBody)
}

// queueSpans moves failure spans: a success resets a span to the failures
// after it (often none); failures alone extend it. Healthy subscriptions
// are not written at all.
func queueSpans(b *pgx.Batch, spans []store.SpanUpdate) {
	var ids []string
	var resets []bool
	var firsts, lasts []*time.Time
	for _, s := range spans {
		ids, resets = append(ids, s.SubscriptionID), append(resets, s.Reset)
		firsts, lasts = append(firsts, s.First), append(lasts, s.Last)
	}
	b.Queue(`UPDATE subscriptions s SET
			failure_first_at = CASE WHEN v.reset THEN v.first ELSE coalesce(s.failure_first_at, v.first) END,
			failure_last_at = CASE WHEN v.reset THEN v.last ELSE greatest(s.failure_last_at, v.last) END,
			version = s.version + 1
		FROM unnest($1::text[], $2::bool[], $3::timestamptz[], $4::timestamptz[]) AS v(id, reset, first, last)
		WHERE s.id = v.id AND (NOT v.reset OR s.failure_first_at IS DISTINCT FROM v.first OR s.failure_last_at IS DISTINCT FROM v.last)`,
		ids, resets, firsts, lasts)
}

// queueAutoDisable turns off subscriptions whose open failure span is both
// sustained and spread, dead-letters their pending jobs, and returns their
// ids.
func queueAutoDisable(b *pgx.Batch, failing []string, g store.AutoDisable, now time.Time) {
	b.Queue(`WITH disabled AS (
			UPDATE subscriptions SET enabled = false, disabled_at = $2::timestamptz, version = version + 1,
				disabled_reason = 'auto-disabled: failing since ' || to_char(failure_first_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
					|| ', last failure ' || to_char(failure_last_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
			WHERE id = ANY($1) AND enabled AND deleted_at IS NULL
			  AND failure_first_at <= $2::timestamptz - $3::interval AND failure_last_at - failure_first_at >= $4::interval
			RETURNING id, disabled_reason
		), dead AS (
			UPDATE delivery_jobs SET status = 'dead_lettered', dead_letter_reason = 'subscription_disabled',
				completed_at = $2::timestamptz, updated_at = $2::timestamptz
			WHERE subscription_id IN (SELECT id FROM disabled) AND status = 'pending'
		)
		SELECT id, disabled_reason FROM disabled`, failing, now, interval(g.Window), interval(g.Spread))
}

func (db *DB) AutoDisable(ctx context.Context, g store.AutoDisable) ([]store.Disabled, error) {
	now := db.opts.Stamp()
	rows, err := db.pool.Query(ctx, `SELECT id FROM subscriptions
		WHERE enabled AND deleted_at IS NULL AND failure_first_at <= $1::timestamptz - $2::interval
		  AND failure_last_at - failure_first_at >= $3::interval`, now, interval(g.Window), interval(g.Spread))
	if err != nil {
		return nil, err
	}
	candidates, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(candidates) == 0 {
		return nil, err
	}
	var disabled []store.Disabled
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		// Subscriptions are locked in id order, as completions do.
		if _, err := tx.Exec(ctx, lockSubscriptions, candidates); err != nil {
			return err
		}
		b := &pgx.Batch{}
		queueAutoDisable(b, candidates, g, now)
		br := tx.SendBatch(ctx, b)
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return err
		}
		if disabled, err = pgx.CollectRows(rows, pgx.RowToStructByPos[store.Disabled]); err != nil {
			br.Close()
			return err
		}
		return br.Close()
	})
	return disabled, err
}

func interval(d time.Duration) string { return fmt.Sprintf("%d microseconds", d.Microseconds()) }
