package sqlite

import (
	"context"
	"database/sql"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// CompleteJobs records a batch of results: Write with results only.
func (db *DB) CompleteJobs(ctx context.Context, p store.CompleteParams) (store.CompleteResult, error) {
	res, err := db.Write(ctx, store.WriteParams{Complete: p})
	return res.Complete, err
}

// complete writes a batch of results in tx (with their rollups unless the
// writer gathers them) and, when p.Next asks, claims the next jobs of the
// subscriptions they free.
func (db *DB) complete(ctx context.Context, tx *sql.Tx, p store.CompleteParams, now time.Time, rollups bool) (store.CompleteResult, error) {
	nowUS := micros(now)
	var res store.CompleteResult
	err := func() error {
		update, err := tx.PrepareContext(ctx, `UPDATE delivery_jobs SET status = ?, attempts = attempts + ?,
			next_attempt_at = ?, dead_letter_reason = ?, last_error = ?, lease_token = NULL, lease_expires_at = NULL,
			leased_by = NULL, updated_at = ?, completed_at = ? WHERE id = ? AND lease_token = ? AND status = 'in_flight'`)
		if err != nil {
			return err
		}
		defer update.Close()
		// An attempt logged already is left as it is: a batch written again
		// after a COMMIT whose answer was lost must not fail on its own rows.
		logAttempt, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO delivery_attempts
			(id, job_id, started_at, duration_ms, status_code, error, response_body, request_headers, response_headers)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer logAttempt.Close()
		var written []string
		for _, c := range p.Completions {
			next := c.NextAttemptAt
			if next.IsZero() {
				next = now
			}
			attempted := 0
			if c.Attempt != nil {
				attempted = 1
			}
			var completed any
			if c.Status == hub.JobSucceeded || c.Status == hub.JobDeadLettered {
				completed = nowUS
			}
			r, err := update.ExecContext(ctx, string(c.Status), attempted, micros(next), c.DeadLetterReason, c.LastError,
				nowUS, completed, c.JobID, c.LeaseToken)
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n == 1 {
				written = append(written, c.JobID)
			}
			if a := c.Attempt; a != nil {
				reqH, respH := store.AttemptHeaders(a)
				if _, err := logAttempt.ExecContext(ctx, a.ID, c.JobID, micros(a.StartedAt), a.Duration.Milliseconds(),
					a.StatusCode, a.Error, a.ResponseBody, reqH, respH); err != nil {
					return err
				}
			}
		}
		res.Fenced = store.Fenced(p.Completions, written)
		for _, h := range store.ShedHolds(p.Completions, now) {
			// Only ordered subscriptions, and only ever later (store.ShedHolds).
			if _, err := tx.ExecContext(ctx, `UPDATE subscriptions SET held_until = max(coalesce(held_until, ?1), ?1)
				WHERE id = ?2 AND max_in_flight <= 1`, micros(h.Until), h.SubscriptionID); err != nil {
				return err
			}
		}
		rep := store.Report{DeadLettered: store.DeadLettering(p.Completions, res.Fenced)}
		for _, u := range store.Spans(p.Completions) {
			if err := updateSpan(ctx, tx, u); err != nil {
				return err
			}
		}
		if failing := store.Failing(p.Completions); p.AutoDisable != nil && len(failing) > 0 {
			if res.Disabled, err = autoDisable(ctx, tx, failing, *p.AutoDisable, now, &rep.DeadLettered); err != nil {
				return err
			}
			rep.Disabled = store.DisabledIDs(res.Disabled)
		}
		if rollups {
			if err := writeRollups(ctx, tx, store.Rollups(p.Completions)); err != nil {
				return err
			}
		}
		if err := db.report(ctx, tx, rep, nowUS); err != nil {
			return err
		}
		if p.Next != nil {
			next := *p.Next
			next.Subscriptions = store.NextTargets(p.Completions, p.Next.Subscriptions)
			res.Claimed, err = claim(ctx, tx, next, now)
		}
		return err
	}()
	return res, err
}

func optMicros(t *time.Time) any {
	if t == nil {
		return nil
	}
	return micros(*t)
}

func updateSpan(ctx context.Context, tx *sql.Tx, u store.SpanUpdate) error {
	first, last := optMicros(u.First), optMicros(u.Last)
	if u.Reset {
		_, err := tx.ExecContext(ctx, `UPDATE subscriptions SET failure_first_at = ?1, failure_last_at = ?2, version = version + 1
			WHERE id = ?3 AND (failure_first_at IS NOT ?1 OR failure_last_at IS NOT ?2)`, first, last, u.SubscriptionID)
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE subscriptions SET failure_first_at = coalesce(failure_first_at, ?1),
		failure_last_at = max(coalesce(failure_last_at, ?2), ?2), version = version + 1 WHERE id = ?3`, first, last, u.SubscriptionID)
	return err
}

// AutoDisable checks every enabled subscription whose span began early
// enough to be due; with one writer, what it reads cannot change before it
// writes.
func (db *DB) AutoDisable(ctx context.Context, g store.AutoDisable) (_ []store.Disabled, err error) {
	defer wrap(&err, "AutoDisable")
	now := db.opts.Stamp()
	var disabled []store.Disabled
	err = db.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id FROM subscriptions WHERE enabled = 1 AND deleted_at IS NULL
			AND failure_first_at <= ?`, micros(g.Cutoff(now)))
		if err != nil {
			return err
		}
		candidates, err := collect(rows, func(r scanner) (string, error) {
			var id string
			return id, r.Scan(&id)
		})
		if err != nil {
			return err
		}
		var rep store.Report
		if disabled, err = autoDisable(ctx, tx, candidates, g, now, &rep.DeadLettered); err != nil {
			return err
		}
		rep.Disabled = store.DisabledIDs(disabled)
		return db.report(ctx, tx, rep, micros(now))
	})
	if err != nil {
		return nil, err
	}
	return disabled, nil
}

// autoDisable reads the open failure spans of the enabled, undeleted
// subscriptions among ids, and disables those Go finds due, storing the
// reason each was given, and dead-letters their waiting jobs (adding their
// ids to *dead).
func autoDisable(ctx context.Context, tx *sql.Tx, ids []string, g store.AutoDisable, now time.Time, dead *[]string) ([]store.Disabled, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, failure_first_at, failure_last_at FROM subscriptions
		WHERE id IN (`+placeholders(len(ids))+`) AND enabled = 1 AND deleted_at IS NULL
		  AND failure_first_at IS NOT NULL AND failure_last_at IS NOT NULL ORDER BY id`, anys(ids)...)
	if err != nil {
		return nil, err
	}
	spans, err := collect(rows, func(r scanner) (store.OpenSpan, error) {
		var s store.OpenSpan
		var first, last int64
		err := r.Scan(&s.SubscriptionID, &first, &last)
		s.First, s.Last = fromMicros(first), fromMicros(last)
		return s, err
	})
	if err != nil {
		return nil, err
	}
	disabled := g.Disable(spans, now)
	nowUS := micros(now)
	for _, d := range disabled {
		if _, err := tx.ExecContext(ctx, `UPDATE subscriptions SET enabled = 0, disabled_at = ?, disabled_reason = ?,
			version = version + 1 WHERE id = ?`, nowUS, d.Reason, d.SubscriptionID); err != nil {
			return nil, err
		}
		ids, err := deadLetterPendingIDs(ctx, tx, d.SubscriptionID, hub.DeadLetterSubscriptionDisabled, nowUS)
		if err != nil {
			return nil, err
		}
		*dead = append(*dead, ids...)
	}
	return disabled, nil
}

// ResultsRecorded: see store.Dispatch.
func (db *DB) ResultsRecorded(ctx context.Context, cs []store.Completion) (_ []string, err error) {
	defer wrap(&err, "ResultsRecorded")
	var out []string
	for _, c := range cs {
		var held, logged int
		if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM delivery_jobs WHERE id = ? AND lease_token = ? AND status = 'in_flight'`,
			c.JobID, c.LeaseToken).Scan(&held); err != nil {
			return nil, err
		}
		if held > 0 {
			continue
		}
		if c.Attempt != nil {
			if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM delivery_attempts WHERE job_id = ? AND id = ?`,
				c.JobID, c.Attempt.ID).Scan(&logged); err != nil {
				return nil, err
			}
			if logged == 0 {
				continue
			}
		}
		out = append(out, c.JobID)
	}
	return out, nil
}
