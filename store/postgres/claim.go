package postgres

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/store"
)

// prefixed qualifies every column of a list with a table alias.
func prefixed(alias, columns string) string {
	parts := strings.Split(columns, ",")
	for i, p := range parts {
		parts[i] = alias + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// lockSubscriptions locks, round-robin across tenants, subscriptions that
// are deliverable and have a due job and a free in-flight slot. Claimers
// skip each other's locks, so a subscription is claimed from by one
// transaction at a time and its in-flight count cannot be raced past
// max_in_flight.
const lockSubscriptions = `
SELECT s.id FROM subscriptions s
JOIN (
	SELECT c.id, c.tenant_id, row_number() OVER (PARTITION BY c.tenant_id ORDER BY c.id) AS rn
	FROM subscriptions c
	WHERE c.enabled AND c.verification_state = 'active' AND c.deleted_at IS NULL
	  AND EXISTS (SELECT 1 FROM delivery_jobs j WHERE j.subscription_id = c.id AND j.status = 'pending' AND j.next_attempt_at <= $1)
	  AND (SELECT count(*) FROM delivery_jobs f WHERE f.subscription_id = c.id AND f.status = 'in_flight') < c.max_in_flight
) r ON r.id = s.id
ORDER BY r.rn, r.tenant_id
LIMIT $2
FOR UPDATE OF s SKIP LOCKED`

// claimJobs runs as its own statement after the locks, so its snapshot sees
// every claim committed before them: the in-flight count is current. Each
// subscription offers its oldest due jobs up to its free slots; the batch
// takes them tenant round by tenant round (each tenant's oldest first).
var claimJobs = `
WITH offered AS (
	SELECT j.id, j.tenant_id, row_number() OVER (PARTITION BY j.tenant_id ORDER BY j.event_sequence) AS rn
	FROM subscriptions s
	CROSS JOIN LATERAL (
		SELECT j.id, j.tenant_id, j.event_sequence FROM delivery_jobs j
		WHERE j.subscription_id = s.id AND j.status = 'pending' AND j.next_attempt_at <= $1
		ORDER BY j.event_sequence
		LIMIT greatest(s.max_in_flight - (SELECT count(*) FROM delivery_jobs f WHERE f.subscription_id = s.id AND f.status = 'in_flight'), 0)
	) j
	WHERE s.id = ANY($2)
), chosen AS (
	SELECT id FROM offered ORDER BY rn, tenant_id LIMIT $3
)
UPDATE delivery_jobs d SET status = 'in_flight', lease_token = $4, lease_expires_at = $5, updated_at = $1
FROM chosen WHERE d.id = chosen.id AND d.status = 'pending'
RETURNING ` + prefixed("d.", jobColumns)

func (db *DB) ClaimJobs(ctx context.Context, p store.ClaimParams) ([]store.Claimed, error) {
	now := db.opts.Stamp()
	token := hub.NewID("lease", now)
	var out []store.Claimed
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		out = nil
		rows, err := tx.Query(ctx, lockSubscriptions, now, p.Batch)
		if err != nil {
			return err
		}
		subIDs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(subIDs) == 0 {
			return err
		}
		jobs, err := collectJobs(tx.Query(ctx, claimJobs, now, subIDs, p.Batch, token, now.Add(p.Lease)))
		if err != nil || len(jobs) == 0 {
			return err
		}
		out, err = loadClaimed(ctx, tx, jobs, token)
		return err
	})
	return out, err
}

// loadClaimed joins claimed jobs with their events and subscriptions.
func loadClaimed(ctx context.Context, tx pgx.Tx, jobs []hub.Job, token string) ([]store.Claimed, error) {
	tenants := make([]string, len(jobs))
	seqs := make([]int64, len(jobs))
	subSet := make(map[string]bool)
	var subIDs []string
	for i, j := range jobs {
		tenants[i], seqs[i] = j.TenantID, j.EventSequence
		if !subSet[j.SubscriptionID] {
			subSet[j.SubscriptionID] = true
			subIDs = append(subIDs, j.SubscriptionID)
		}
	}
	events, err := collectEvents(tx.Query(ctx, `SELECT `+prefixed("e.", eventSelect)+` FROM unnest($1::text[], $2::bigint[]) AS k(tenant_id, sequence)
		JOIN events e ON e.tenant_id = k.tenant_id AND e.sequence = k.sequence`, tenants, seqs))
	if err != nil {
		return nil, err
	}
	byKey := make(map[store.EventKey]hub.Event, len(events))
	for _, ev := range events {
		byKey[store.EventKey{TenantID: ev.TenantID, ID: ev.ID}] = ev
	}
	rows, err := tx.Query(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions WHERE id = ANY($1)`, subIDs)
	if err != nil {
		return nil, err
	}
	subs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Subscription, error) { return scanSubscription(r) })
	if err != nil {
		return nil, err
	}
	byID := make(map[string]hub.Subscription, len(subs))
	for _, s := range subs {
		byID[s.ID] = s
	}
	out := make([]store.Claimed, len(jobs))
	for i, j := range jobs {
		out[i] = store.Claimed{Job: j, LeaseToken: token, Event: byKey[store.EventKey{TenantID: j.TenantID, ID: j.EventID}], Subscription: byID[j.SubscriptionID]}
	}
	return out, nil
}

func (db *DB) ReleaseJobs(ctx context.Context, leases []store.JobLease) error {
	if len(leases) == 0 {
		return nil
	}
	ids, tokens := leaseArrays(leases)
	_, err := db.pool.Exec(ctx, `UPDATE delivery_jobs d SET status = 'pending', lease_token = NULL, lease_expires_at = NULL,
		next_attempt_at = $3, updated_at = $3
		FROM unnest($1::text[], $2::text[]) AS v(id, token)
		WHERE d.id = v.id AND d.lease_token = v.token AND d.status = 'in_flight'`, ids, tokens, db.opts.Stamp())
	return err
}

func leaseArrays(leases []store.JobLease) (ids, tokens []string) {
	for _, l := range leases {
		ids, tokens = append(ids, l.JobID), append(tokens, l.LeaseToken)
	}
	return ids, tokens
}

func (db *DB) RecoverLeases(ctx context.Context, p store.RecoverParams) (store.RecoverResult, error) {
	now := db.opts.Stamp()
	rows, err := db.pool.Query(ctx, `WITH expired AS (
			SELECT id FROM delivery_jobs WHERE status = 'in_flight' AND lease_expires_at < $1
			ORDER BY lease_expires_at LIMIT $3 FOR UPDATE SKIP LOCKED)
		UPDATE delivery_jobs d SET
			recoveries = d.recoveries + 1,
			status = CASE WHEN d.recoveries + 1 >= $2 THEN 'dead_lettered' ELSE 'pending' END,
			dead_letter_reason = CASE WHEN d.recoveries + 1 >= $2 THEN 'poison' ELSE d.dead_letter_reason END,
			completed_at = CASE WHEN d.recoveries + 1 >= $2 THEN $1::timestamptz END,
			last_error = 'lease expired without a result: the worker stopped mid-attempt',
			lease_token = NULL, lease_expires_at = NULL, next_attempt_at = $1, updated_at = $1
		FROM expired WHERE d.id = expired.id
		RETURNING d.status`, now, p.PoisonThreshold, max(p.Limit, 1))
	if err != nil {
		return store.RecoverResult{}, err
	}
	statuses, err := pgx.CollectRows(rows, pgx.RowTo[string])
	var res store.RecoverResult
	for _, s := range statuses {
		if s == string(hub.JobDeadLettered) {
			res.Poisoned++
		} else {
			res.Recovered++
		}
	}
	return res, err
}

func (db *DB) DeadLetterOrphans(ctx context.Context) (int, error) {
	now := db.opts.Stamp()
	tag, err := db.pool.Exec(ctx, `UPDATE delivery_jobs d SET status = 'dead_lettered',
			dead_letter_reason = CASE WHEN s.deleted_at IS NOT NULL THEN 'subscription_deleted' ELSE 'subscription_disabled' END,
			completed_at = $1, updated_at = $1
		FROM subscriptions s
		WHERE d.subscription_id = s.id AND d.status = 'pending' AND (s.deleted_at IS NOT NULL OR NOT s.enabled)`, now)
	return int(tag.RowsAffected()), err
}

func (db *DB) PruneDeadLetters(ctx context.Context, p store.PruneParams) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `DELETE FROM delivery_jobs WHERE id IN (
			SELECT id FROM delivery_jobs WHERE status = 'dead_lettered' AND completed_at < $1 LIMIT $2)
			RETURNING id`, p.Before, max(p.Limit, 1))
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(ids) == 0 {
			return err
		}
		n = len(ids)
		_, err = tx.Exec(ctx, `DELETE FROM delivery_attempts WHERE job_id = ANY($1)`, ids)
		return err
	})
	return n, err
}

func (db *DB) CountJobs(ctx context.Context) (map[hub.JobStatus]int64, error) {
	rows, err := db.pool.Query(ctx, `SELECT status, count(*) FROM delivery_jobs
		WHERE status IN ('pending', 'in_flight', 'dead_lettered') GROUP BY status`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[hub.JobStatus]int64{hub.JobPending: 0, hub.JobInFlight: 0, hub.JobDeadLettered: 0}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[hub.JobStatus(s)] = n
	}
	return out, rows.Err()
}
