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

// ClaimJobs: SQLite has one writer, so the whole claim is one write
// transaction and no other claimer can interleave.
func (db *DB) ClaimJobs(ctx context.Context, p store.ClaimParams) (_ []store.Claimed, err error) {
	defer wrap(&err, "ClaimJobs")
	var out []store.Claimed
	err = db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = claim(ctx, tx, p, db.opts.Stamp())
		return err
	})
	return out, err
}

// claimJobs claims in one statement, in the shape of PostgreSQL's: each
// deliverable subscription with a free in-flight slot offers its oldest due
// jobs up to its free slots, and the batch takes them tenant round by
// tenant round (store.FairClaim). A subscription's offer is read through
// its pending index, at most a batch of it (the batch can take no more
// from one subscription), so a claim costs in proportion to the batch, not
// to the backlog. ?5 is the list of subscriptions of a targeted claim
// (%s), empty for a full one.
const claimJobs = `
WITH subs AS (
	SELECT s.id, s.max_in_flight -
		(SELECT count(*) FROM delivery_jobs f WHERE f.subscription_id = s.id AND f.status = 'in_flight') AS free
	FROM subscriptions s
	WHERE s.enabled = 1 AND s.verification_state = 'active' AND s.deleted_at IS NULL %s
), offered AS (
	SELECT id, tenant_id, event_sequence FROM (
		SELECT j.id, j.tenant_id, j.event_sequence, subs.free,
			row_number() OVER (PARTITION BY j.subscription_id ORDER BY j.event_sequence) AS k
		FROM subs JOIN delivery_jobs j ON j.id IN (
			SELECT p.id FROM delivery_jobs p
			WHERE p.subscription_id = subs.id AND p.status = 'pending' AND p.next_attempt_at <= ?1
			ORDER BY p.event_sequence LIMIT ?2)
		WHERE subs.free > 0
	) WHERE k <= free
), ` + "%s" + `
UPDATE delivery_jobs SET status = 'in_flight', lease_token = ?3, lease_expires_at = ?4, updated_at = ?1
WHERE id IN (SELECT id FROM chosen) AND status = 'pending'
RETURNING ` + jobColumns

// claim claims within tx; completions use it to claim the next jobs of the
// subscriptions they just freed, in their own transaction.
func claim(ctx context.Context, tx *sql.Tx, p store.ClaimParams, now time.Time) ([]store.Claimed, error) {
	if p.Subscriptions != nil && len(p.Subscriptions) == 0 {
		return nil, nil // targeted at nothing
	}
	token := hub.NewID("lease", now)
	args := []any{micros(now), p.Batch, token, micros(now.Add(p.Lease))}
	for _, id := range p.Subscriptions {
		args = append(args, id)
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(claimJobs, only(len(p.Subscriptions)), store.FairClaim("?2")), args...)
	if err != nil {
		return nil, err
	}
	jobs, err := collect(rows, scanJob)
	if err != nil {
		return nil, err
	}
	return loadClaimed(ctx, tx, jobs, token)
}

// only restricts the subscriptions of a claim to the ids numbered ?5 on,
// when there are any.
func only(n int) string {
	if n == 0 {
		return ""
	}
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("?%d", i+5)
	}
	return " AND s.id IN (" + strings.Join(ps, ", ") + ")"
}

func loadClaimed(ctx context.Context, tx *sql.Tx, jobs []hub.Job, token string) ([]store.Claimed, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	getEvent, err := tx.PrepareContext(ctx, `SELECT `+eventSelect+` FROM events WHERE tenant_id = ? AND sequence = ?`)
	if err != nil {
		return nil, err
	}
	defer getEvent.Close()
	getSub, err := tx.PrepareContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions WHERE id = ?`)
	if err != nil {
		return nil, err
	}
	defer getSub.Close()
	subs := make(map[string]hub.Subscription)
	out := make([]store.Claimed, len(jobs))
	for i, j := range jobs {
		ev, err := scanEvent(getEvent.QueryRowContext(ctx, j.TenantID, j.EventSequence))
		if err != nil && err != sql.ErrNoRows {
			return nil, err
		}
		s, ok := subs[j.SubscriptionID]
		if !ok {
			if s, err = scanSubscription(getSub.QueryRowContext(ctx, j.SubscriptionID)); err != nil {
				return nil, err
			}
			subs[j.SubscriptionID] = s
		}
		out[i] = store.Claimed{Job: j, LeaseToken: token, Event: ev, Subscription: s}
	}
	return out, nil
}

func (db *DB) ReleaseJobs(ctx context.Context, leases []store.JobLease) (err error) {
	defer wrap(&err, "ReleaseJobs")
	now := micros(db.opts.Stamp())
	return db.tx(ctx, func(tx *sql.Tx) error {
		for _, l := range leases {
			if _, err := tx.ExecContext(ctx, `UPDATE delivery_jobs SET status = 'pending', lease_token = NULL,
				lease_expires_at = NULL, next_attempt_at = ?, updated_at = ?
				WHERE id = ? AND lease_token = ? AND status = 'in_flight'`, now, now, l.JobID, l.LeaseToken); err != nil {
				return err
			}
		}
		return nil
	})
}

func (db *DB) RecoverLeases(ctx context.Context, p store.RecoverParams) (_ store.RecoverResult, err error) {
	defer wrap(&err, "RecoverLeases")
	now := micros(db.opts.Stamp())
	var res store.RecoverResult
	err = db.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE delivery_jobs SET
				recoveries = recoveries + 1,
				status = CASE WHEN recoveries + 1 >= ?1 THEN 'dead_lettered' ELSE 'pending' END,
				dead_letter_reason = CASE WHEN recoveries + 1 >= ?1 THEN 'poison' ELSE dead_letter_reason END,
				completed_at = CASE WHEN recoveries + 1 >= ?1 THEN ?2 END,
				last_error = 'lease expired without a result: the worker stopped mid-attempt',
				lease_token = NULL, lease_expires_at = NULL, next_attempt_at = ?2, updated_at = ?2
			WHERE id IN (SELECT id FROM delivery_jobs WHERE status = 'in_flight' AND lease_expires_at < ?2
			             ORDER BY lease_expires_at LIMIT ?3)
			RETURNING id, status`, p.PoisonThreshold, now, max(p.Limit, 1))
		if err != nil {
			return err
		}
		type result struct{ id, status string }
		results, err := collect(rows, func(r scanner) (result, error) {
			var s result
			return s, r.Scan(&s.id, &s.status)
		})
		if err != nil {
			return err
		}
		var rep store.Report
		for _, s := range results {
			if s.status == string(hub.JobDeadLettered) {
				res.Poisoned++
				rep.DeadLettered = append(rep.DeadLettered, s.id)
			} else {
				res.Recovered++
			}
		}
		return db.report(ctx, tx, rep, now)
	})
	return res, err
}

func (db *DB) DeadLetterOrphans(ctx context.Context) (_ int, err error) {
	defer wrap(&err, "DeadLetterOrphans")
	now := micros(db.opts.Stamp())
	var dead []string
	err = db.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `UPDATE delivery_jobs SET status = 'dead_lettered',
				dead_letter_reason = CASE WHEN (SELECT deleted_at FROM subscriptions s WHERE s.id = delivery_jobs.subscription_id) IS NOT NULL
					THEN 'subscription_deleted' ELSE 'subscription_disabled' END,
				completed_at = ?, updated_at = ?
			WHERE status = 'pending' AND subscription_id IN (SELECT id FROM subscriptions WHERE deleted_at IS NOT NULL OR enabled = 0)
			RETURNING id`, now, now)
		if err != nil {
			return err
		}
		if dead, err = collect(rows, func(r scanner) (string, error) {
			var id string
			return id, r.Scan(&id)
		}); err != nil {
			return err
		}
		return db.report(ctx, tx, store.Report{DeadLettered: dead}, now)
	})
	return len(dead), err
}

// CountJobs: see store.CountJobsSQL.
func (db *DB) CountJobs(ctx context.Context) (_ map[hub.JobStatus]int64, err error) {
	defer wrap(&err, "CountJobs")
	var pending, inFlight, dead int64
	if err := db.r.QueryRowContext(ctx, store.CountJobsSQL).Scan(&pending, &inFlight, &dead); err != nil {
		return nil, err
	}
	return store.JobCounts(pending, inFlight, dead), nil
}
