package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
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
WITH counted AS (
	SELECT s.id, s.max_in_flight, coalesce(s.backfill_hold, 9223372036854775807) AS hold,
		(SELECT count(*) FROM delivery_jobs f WHERE f.subscription_id = s.id AND f.status = 'in_flight') AS in_flight
	FROM subscriptions s
	WHERE s.enabled = 1 AND s.verification_state = 'active' AND s.deleted_at IS NULL %s
	  AND (s.held_until IS NULL OR s.held_until <= ?1) -- a breaker shed its oldest job until then
), subs AS (
	-- An ordered subscription with nothing in flight may offer a run.
	SELECT id, hold, (?5 > 1 AND max_in_flight = 1 AND in_flight = 0) AS run,
		CASE WHEN ?5 > 1 AND max_in_flight = 1 AND in_flight = 0 THEN ?5 ELSE max_in_flight - in_flight END AS free
	FROM counted
), offered AS (
	SELECT id, tenant_id, event_sequence, run AND k > 1 AS run_ahead FROM (
		SELECT j.id, j.tenant_id, j.event_sequence, subs.free, subs.run,
			row_number() OVER (PARTITION BY j.subscription_id ORDER BY j.event_sequence) AS k
		FROM subs JOIN delivery_jobs j ON j.id IN (
			SELECT p.id FROM delivery_jobs p
			WHERE p.subscription_id = subs.id AND p.status = 'pending' AND p.next_attempt_at <= ?1
			  AND p.event_sequence <= subs.hold -- a running backfill holds the newer jobs back
			ORDER BY p.event_sequence LIMIT ?2)
		WHERE subs.free > 0
	) WHERE k <= free
), ` + "%s" + `
UPDATE delivery_jobs SET status = 'in_flight', lease_token = ?3, lease_expires_at = ?4, updated_at = ?1,
	run_ahead = (SELECT c.run_ahead FROM chosen c WHERE c.id = delivery_jobs.id)
WHERE id IN (SELECT id FROM chosen) AND status = 'pending'
RETURNING ` + jobColumns

// claim claims within tx; completions use it to claim the next jobs of the
// subscriptions they just freed, in their own transaction.
func claim(ctx context.Context, tx *sql.Tx, p store.ClaimParams, now time.Time) ([]store.Claimed, error) {
	if p.Subscriptions != nil && len(p.Subscriptions) == 0 {
		return nil, nil // targeted at nothing
	}
	token := p.Token
	if token == "" {
		token = hub.NewID("lease", now)
	}
	args := []any{micros(now), p.Batch, token, micros(now.Add(p.Lease)), p.Run}
	for _, id := range p.Subscriptions {
		args = append(args, id)
	}
	for _, id := range p.Exclude {
		args = append(args, id)
	}
	narrow := only(" AND s.id IN", 6, len(p.Subscriptions)) + only(" AND s.id NOT IN", 6+len(p.Subscriptions), len(p.Exclude))
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(claimJobs, narrow, store.FairClaim("?2")), args...)
	if err != nil {
		return nil, err
	}
	jobs, err := collect(rows, scanJob)
	if err != nil {
		return nil, err
	}
	if p.Owner != "" {
		// The jobs are the claiming process's while its heartbeat is fresh
		// (docs/delivery.md, "Crashes").
		if _, err := tx.ExecContext(ctx, `UPDATE delivery_jobs SET leased_by = ? WHERE lease_token = ? AND status = 'in_flight'`,
			p.Owner, token); err != nil {
			return nil, err
		}
		// The claimer holds these subscriptions' in-flight jobs: ingest may
		// append an ordered one's new jobs behind them, born leased to it.
		for _, id := range store.SubscriptionsOfJobs(jobs) {
			if _, err := tx.ExecContext(ctx, `UPDATE subscriptions SET leased_by = ? WHERE id = ?`, p.Owner, id); err != nil {
				return nil, err
			}
		}
	}
	return loadClaimed(ctx, tx, jobs, token)
}

// only narrows the subscriptions of a claim with a condition on n ids
// numbered from ?first on, when there are any.
func only(cond string, first, n int) string {
	if n == 0 {
		return ""
	}
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf("?%d", i+first)
	}
	return cond + " (" + strings.Join(ps, ", ") + ")"
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
				lease_expires_at = NULL, leased_by = NULL, next_attempt_at = ?, updated_at = ?
				WHERE id = ? AND lease_token = ? AND status = 'in_flight'`, now, now, l.JobID, l.LeaseToken); err != nil {
				return err
			}
		}
		return nil
	})
}

func (db *DB) RenewLeases(ctx context.Context, p store.RenewParams) (_ []string, err error) {
	defer wrap(&err, "RenewLeases")
	if len(p.Leases) == 0 {
		return nil, nil
	}
	until := micros(db.opts.Stamp().Add(p.Lease))
	var renewed []string
	err = db.tx(ctx, func(tx *sql.Tx) error {
		renewed = renewed[:0]
		st, err := tx.PrepareContext(ctx, `UPDATE delivery_jobs SET lease_expires_at = ?
			WHERE id = ? AND lease_token = ? AND status = 'in_flight'`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, l := range p.Leases {
			r, err := st.ExecContext(ctx, until, l.JobID, l.LeaseToken)
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n == 1 {
				renewed = append(renewed, l.JobID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return store.Lost(p.Leases, renewed), nil
}

// RecoverLeases: with one writer, what it reads cannot change before it
// writes. A job counts unless it is run-ahead behind another job of its run
// still in flight (that one was never attempted); see PostgreSQL's.
func (db *DB) RecoverLeases(ctx context.Context, p store.RecoverParams) (_ store.RecoverResult, err error) {
	defer wrap(&err, "RecoverLeases")
	now := db.opts.Stamp()
	nowUS := micros(now)
	var res store.RecoverResult
	err = db.tx(ctx, func(tx *sql.Tx) error {
		res = store.RecoverResult{}
		// A process whose heartbeat lapsed loses all its jobs at once, and
		// its row; the others' jobs end with their own lease.
		var lapsed []string
		if p.Lease > 0 {
			rows, err := tx.QueryContext(ctx, `DELETE FROM dispatchers WHERE heartbeat_at < ? AND id <> ? RETURNING id`,
				micros(now.Add(-p.Lease)), p.Self)
			if err != nil {
				return err
			}
			if lapsed, err = collect(rows, func(r scanner) (string, error) {
				var id string
				return id, r.Scan(&id)
			}); err != nil {
				return err
			}
			res.Processes = len(lapsed)
		}
		// ?3 is a JSON array of the lapsed processes.
		gone, _ := json.Marshal(append([]string{}, lapsed...))
		rows, err := tx.QueryContext(ctx, `SELECT e.id, e.updated_at, CASE WHEN e.run_ahead = 1 AND EXISTS (
				SELECT 1 FROM delivery_jobs o WHERE o.subscription_id = e.subscription_id AND o.status = 'in_flight'
				  AND o.event_sequence < e.event_sequence) THEN 0 ELSE 1 END,
				e.leased_by IS NOT NULL AND e.leased_by IN (SELECT value FROM json_each(?3))
			FROM delivery_jobs e WHERE e.status = 'in_flight' AND (
				e.leased_by IN (SELECT value FROM json_each(?3))
				OR e.lease_expires_at < ?1 AND (e.leased_by IS NULL OR NOT EXISTS (SELECT 1 FROM dispatchers d WHERE d.id = e.leased_by)))
			ORDER BY e.lease_expires_at LIMIT ?2`, nowUS, max(p.Limit, 1)+maxInFlightOfAll, string(gone))
		if err != nil {
			return err
		}
		type expired struct {
			id        string
			claimedAt int64
			n         int
			lapsed    bool
		}
		found, err := collect(rows, func(r scanner) (expired, error) {
			var e expired
			return e, r.Scan(&e.id, &e.claimedAt, &e.n, &e.lapsed)
		})
		if err != nil {
			return err
		}
		var rep store.Report
		for _, e := range found {
			var status string
			if err := tx.QueryRowContext(ctx, `UPDATE delivery_jobs SET
					recoveries = recoveries + ?3, attempts = attempts + ?3,
					status = CASE WHEN ?3 = 1 AND recoveries + 1 >= ?1 THEN 'dead_lettered' ELSE 'pending' END,
					dead_letter_reason = CASE WHEN ?3 = 1 AND recoveries + 1 >= ?1 THEN 'poison' ELSE dead_letter_reason END,
					completed_at = CASE WHEN ?3 = 1 AND recoveries + 1 >= ?1 THEN ?2 END,
					last_error = CASE WHEN ?3 = 1 THEN ?5 || ?6 ELSE last_error END,
					lease_token = NULL, lease_expires_at = NULL, leased_by = NULL, run_ahead = 0, next_attempt_at = ?2, updated_at = ?2
				WHERE id = ?4 RETURNING status`, p.PoisonThreshold, nowUS, e.n, e.id, recoveredWhy(e.lapsed), store.RecoveredAttemptError).Scan(&status); err != nil {
				return err
			}
			switch {
			case e.n == 0:
				res.Unstarted++
				continue
			case status == string(hub.JobDeadLettered):
				res.Poisoned++
				rep.DeadLettered = append(rep.DeadLettered, e.id)
			default:
				res.Recovered++
			}
			a := store.RecoveredAttempt(fromMicros(e.claimedAt), now)
			if _, err := tx.ExecContext(ctx, `INSERT INTO delivery_attempts
				(id, job_id, started_at, duration_ms, status_code, error, response_body) VALUES (?, ?, ?, ?, 0, ?, '')`,
				a.ID, e.id, micros(a.StartedAt), a.Duration.Milliseconds(), a.Error); err != nil {
				return err
			}
		}
		return db.report(ctx, tx, rep, nowUS)
	})
	return res, err
}

// maxInFlightOfAll bounds the jobs of lapsed processes recovered at once
// beyond the caller's limit (SQLite serves one process: its own last run's).
const maxInFlightOfAll = 100000

// recoveredWhy starts a recovered job's last error: its process stopped
// (its heartbeat lapsed), or its own lease ended.
func recoveredWhy(lapsed bool) string {
	if lapsed {
		return "its process stopped before its result was written: "
	}
	return "lease expired without a result: "
}

func (db *DB) WakeJobs(ctx context.Context, subscriptionIDs []string) (_ int, err error) {
	defer wrap(&err, "WakeJobs")
	if len(subscriptionIDs) == 0 {
		return 0, nil
	}
	now := micros(db.opts.Stamp())
	// The jobs first, then the hold: a claim between the two must not find
	// the held subscription's later jobs due and its earlier ones not yet.
	r, err := db.w.ExecContext(ctx, `UPDATE delivery_jobs SET next_attempt_at = ?1, updated_at = ?1
		WHERE status = 'pending' AND next_attempt_at > ?1 AND subscription_id IN (`+placeholders(len(subscriptionIDs))+`)`,
		append([]any{now}, anys(subscriptionIDs)...)...)
	if err != nil {
		return 0, err
	}
	if _, err := db.w.ExecContext(ctx, `UPDATE subscriptions SET held_until = NULL WHERE held_until IS NOT NULL AND id IN (`+
		placeholders(len(subscriptionIDs))+`)`, anys(subscriptionIDs)...); err != nil {
		return 0, err
	}
	n, err := r.RowsAffected()
	return int(n), err
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
