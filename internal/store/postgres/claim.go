package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// prefixed qualifies every column of a list with a table alias.
func prefixed(alias, columns string) string {
	parts := strings.Split(columns, ",")
	for i, p := range parts {
		parts[i] = alias + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// claimJobs claims in one statement. It locks, round-robin across tenants,
// deliverable subscriptions with a free in-flight slot, reading the slots
// from the locked row itself (a row lock returns its latest version, so a
// claim committed a moment ago is counted); each offers its oldest due jobs
// up to its free slots, and the batch takes them tenant round by tenant
// round (each tenant's oldest first: store.FairClaim). Claims never wait: a subscription
// another transaction holds is skipped, and a subscription's waiting jobs
// are only ever taken by whoever holds its row. A job seen as waiting by a
// snapshot that is already stale fails the update's status check and is
// simply not claimed. The claimed jobs come back with their events and
// subscriptions.
//
// The %s slots (a join, a condition) narrow the candidates: a targeted
// claim names the subscriptions whose jobs just finished; a full claim
// looks for due jobs everywhere.
var claimJobs = `
WITH locked AS (
	SELECT s.id, s.tenant_id, s.max_in_flight, s.in_flight, coalesce(s.backfill_hold, 9223372036854775807) AS hold
	FROM subscriptions s
	JOIN (
		SELECT c.id, row_number() OVER (PARTITION BY c.tenant_id ORDER BY c.id) AS rn
		FROM subscriptions c %s
		WHERE c.enabled AND c.verification_state = 'active' AND c.deleted_at IS NULL
		  AND c.in_flight < c.max_in_flight AND NOT (c.id = ANY($6)) %s
		  AND (c.held_until IS NULL OR c.held_until <= $1) -- a breaker shed its oldest job until then
	) r ON r.id = s.id
	WHERE s.in_flight < s.max_in_flight
	ORDER BY r.rn, s.tenant_id
	LIMIT $2
	FOR NO KEY UPDATE OF s SKIP LOCKED
), subs AS (
	-- An ordered subscription with nothing in flight may offer a run.
	SELECT id, tenant_id, hold, ($5 > 1 AND max_in_flight = 1 AND in_flight = 0) AS run,
		CASE WHEN $5 > 1 AND max_in_flight = 1 AND in_flight = 0 THEN $5 ELSE max_in_flight - in_flight END AS free
	FROM locked
), offered AS (
	SELECT j.id, j.tenant_id, j.event_sequence,
		subs.run AND row_number() OVER (PARTITION BY subs.id ORDER BY j.event_sequence) > 1 AS run_ahead
	FROM subs CROSS JOIN LATERAL (
		SELECT j.id, j.tenant_id, j.event_sequence FROM delivery_jobs j
		WHERE j.subscription_id = subs.id AND j.status = 'pending' AND j.next_attempt_at <= $1
		  AND j.event_sequence <= subs.hold -- a running backfill holds the newer jobs back
		ORDER BY j.event_sequence
		LIMIT subs.free
	) j
), ` + store.FairClaim("$2") + `, claimed AS (
	-- Written "IS NOT DISTINCT FROM", not "=", so that it does not imply
	-- the predicate of delivery_jobs_pending: on a big table the statistics
	-- see almost no pending jobs, and the planner would otherwise scan every
	-- waiting job for each chosen one instead of looking each up by id.
	UPDATE delivery_jobs d SET status = 'in_flight', lease_token = $3, lease_expires_at = $4, updated_at = $1,
		run_ahead = chosen.run_ahead, leased_by = nullif($7, '')
	FROM chosen WHERE d.id = chosen.id AND d.status IS NOT DISTINCT FROM 'pending'
	RETURNING ` + jobColumnsOf("d") + `
), counted AS (
	-- leased_by names the claimer: ingest may append an ordered
	-- subscription's new jobs behind these, born leased to it.
	UPDATE subscriptions s SET in_flight = s.in_flight + c.n, leased_by = nullif($7, '')
	FROM (SELECT subscription_id, count(*) AS n FROM claimed GROUP BY subscription_id) c
	WHERE s.id = c.subscription_id
)
SELECT ` + prefixed("c.", jobColumns) + `, ` + prefixed("e.", eventSelect) + `, ` + prefixed("s.", subscriptionColumns) + `,
	s.healed_at
FROM claimed c
JOIN events e ON e.tenant_id = c.tenant_id AND e.sequence = c.event_sequence
JOIN subscriptions s ON s.id = c.subscription_id`

var (
	// A full claim looks at every subscription with a due job. The due
	// check reads lease_token (outside the index, always NULL while
	// pending) on purpose: a plain index scan marks the entries of jobs
	// that moved on as dead as it passes them, where an index-only scan
	// would visit the heap for each of them on every claim until vacuum.
	// It is a LATERAL ... LIMIT 1, not an EXISTS, so it stays one index
	// probe per subscription: the planner may turn an EXISTS into a hash
	// of every waiting job, which it believes to be few on a big table.
	claimAll = fmt.Sprintf(claimJobs, `CROSS JOIN LATERAL (SELECT 1 FROM delivery_jobs j
		WHERE j.subscription_id = c.id AND j.status = 'pending' AND j.next_attempt_at <= $1 AND j.lease_token IS NULL
		  AND j.event_sequence <= coalesce(c.backfill_hold, 9223372036854775807)
		LIMIT 1) due`, "")
	claimSome = fmt.Sprintf(claimJobs, "", "AND c.id = ANY($8)")
)

func jobColumnsOf(alias string) string { return prefixed(alias+".", jobColumns) }

// Updates that name their jobs by id check the status with "IS NOT
// DISTINCT FROM" rather than "=": it does not imply the predicate of a
// partial status index, so the planner looks each job up by id instead of
// scanning every pending or in-flight job, which a big table's statistics
// make look free. (See claimed, above.)

// queueDispatchSettings queues the settings of a claim's or a
// completion's transaction, first:
//
//   - synchronous_commit off lets it commit without waiting for its WAL
//     flush. It is safe for both: if PostgreSQL crashes and loses one, the
//     job is simply delivered again, which at-least-once allows (receivers
//     dedupe on X-Lerian-Event-Id). Ingest never uses it: a Kafka offset
//     is committed only after its transaction is durable.
//   - bitmap scans off keeps a claim on the index that is already in
//     arrival order: with a LIMIT the planner cannot see (each
//     subscription's free slots), it would otherwise bitmap-scan and sort
//     every waiting job of a subscription to take the first.
//   - sequential scans off keeps every job looked up by its index. These
//     statements run hundreds of times a second as prepared statements,
//     and a generic plan made while the tables were young (a fresh
//     install, a benchmark's fresh schema, before the first ANALYZE) sees
//     them nearly empty: a plan that scans delivery_jobs once per result
//     of the batch then stays cached until the statistics change. Measured
//     on a fresh schema, it made a completion of 128 results take 100 ms.
//   - generic plans always: left to itself PostgreSQL plans these
//     statements (CTEs of several joins and updates) afresh at every
//     execution whenever a custom plan looks cheaper than the generic one,
//     which for the claims and completions it always does; planning cost
//     more than executing (0.8 ms of 1.4 for a claim across 200
//     subscriptions). With the scans above off, the generic plan looks
//     jobs up by their indexes like the custom ones.
func queueDispatchSettings(b *pgx.Batch) {
	//
	// One statement sets them all: each statement of a transaction costs
	// PostgreSQL CPU of its own, and these transactions run for every job.
	b.Queue(dispatchSettings)
}

const dispatchSettings = `SELECT set_config('synchronous_commit', 'off', true), set_config('enable_bitmapscan', 'off', true),
	set_config('enable_seqscan', 'off', true), set_config('plan_cache_mode', 'force_generic_plan', true)`

// ClaimJobs is one round trip: BEGIN, the claim and COMMIT, pipelined.
func (db *DB) ClaimJobs(ctx context.Context, p store.ClaimParams) (_ []store.Claimed, err error) {
	defer wrap(&err, "ClaimJobs")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	var out []store.Claimed
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	queueDispatchSettings(b)
	queueClaim(b, p, db.opts.Stamp(), &out)
	b.Queue("COMMIT")
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	return out, nil
}

// queueClaim queues the claim of p in b; the claimed jobs land in *out as
// the batch's results are read.
func queueClaim(b *pgx.Batch, p store.ClaimParams, now time.Time, out *[]store.Claimed) {
	token := p.Token
	if token == "" {
		token = hub.NewID("lease", now)
	}
	var q *pgx.QueuedQuery
	// Never NULL: "NOT (id = ANY(NULL))" would exclude everything.
	exclude := append([]string{}, p.Exclude...)
	if p.Subscriptions != nil {
		q = b.Queue(claimSome, now, p.Batch, token, now.Add(p.Lease), p.Run, exclude, p.Owner, p.Subscriptions)
	} else {
		q = b.Queue(claimAll, now, p.Batch, token, now.Add(p.Lease), p.Run, exclude, p.Owner)
	}
	q.Query(func(rows pgx.Rows) error {
		var err error
		*out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Claimed, error) { return scanClaimed(r, token) })
		return err
	})
}

// scanClaimed reads a claim row: job, event and subscription columns.
func scanClaimed(r pgx.Row, token string) (store.Claimed, error) { return scanLeased(r, token, true) }

// scanLeased reads a row of a leased job: job columns, event columns
// unless withEvent is false (the caller has the event), subscription
// columns, then extra.
func scanLeased(r pgx.Row, token string, withEvent bool, extra ...any) (store.Claimed, error) {
	var c store.Claimed
	c.LeaseToken = token
	var ev hub.Event
	var ext, et, headers, retry, filters []byte
	var dc string
	var first, last, healed *time.Time
	j, s := &c.Job, &c.Subscription
	dest := []any{
		&j.ID, &j.TenantID, &j.SubscriptionID, &j.EventSequence, &j.EventID, &j.Status, &j.Attempts,
		&j.NextAttemptAt, &j.Recoveries, &j.DeadLetterReason, &j.LastError, &j.EnqueuedAt, &j.CreatedAt,
		&j.UpdatedAt, &j.CompletedAt}
	if withEvent {
		dest = append(dest,
			&ev.TenantID, &ev.Sequence, &ev.ID, &ev.SpecVersion, &ev.Type, &ev.EventType, &ev.Source,
			&ev.Subject, &ev.Time, &ev.SchemaVersion, &ev.SchemaMajor, &ev.DataContentType, &ev.DataSchema,
			&ext, &ev.Data, &ev.Topic, &ev.Partition, &ev.Offset, &ev.ReceivedAt, &ev.TraceParent, &ev.TraceState, &ev.ProducerKeyID)
	}
	dest = append(dest, &s.ID, &s.TenantID, &s.Name, &et, &s.Destination.Type, &s.Destination.URL, &headers,
		&s.Destination.AuthType, &s.Destination.AuthHeaderName, &s.Secrets, &retry, &s.MaxInFlight, &s.Enabled,
		&s.VerificationState, &s.DisabledReason, &s.DisabledAt, &first, &last, &s.Version, &s.CreatedAt, &s.UpdatedAt,
		&filters, &s.RateLimit, &dc,
		&s.Transform, &healed)
	err := r.Scan(append(dest, extra...)...)
	if err != nil {
		return c, err
	}
	if err := store.DecodeDestinationConfig(s, []byte(dc)); err != nil {
		return c, err
	}
	if healed != nil {
		c.HealedAt = healed.UTC()
	}
	if ext != nil {
		if err := json.Unmarshal(ext, &ev.Extensions); err != nil {
			return c, err
		}
	}
	if withEvent {
		ev.ReceivedAt = ev.ReceivedAt.UTC()
		c.Event = ev
	}
	j.NextAttemptAt, j.EnqueuedAt, j.CreatedAt, j.UpdatedAt = j.NextAttemptAt.UTC(), j.EnqueuedAt.UTC(), j.CreatedAt.UTC(), j.UpdatedAt.UTC()
	if first != nil && last != nil {
		s.FailureSpan = &hub.FailureSpan{First: first.UTC(), Last: last.UTC()}
	}
	return c, store.DecodeSubscription(s, et, headers, retry, filters)
}

// lockSubscriptionsOf locks, in id order, the subscriptions of in-flight
// jobs. Everything that takes a job out of flight does this first, and
// claims never wait, so these transactions cannot deadlock each other.
// Subscription rows are only ever locked FOR NO KEY UPDATE: that does not
// conflict with the key-share locks of foreign-key checks, so ingest
// inserting jobs (which reference their subscription) never waits on a
// claim or a completion.
const lockSubscriptionsOf = `SELECT id FROM subscriptions WHERE id IN (
	SELECT subscription_id FROM delivery_jobs WHERE id = ANY($1)) ORDER BY id FOR NO KEY UPDATE`

// lockSubscriptions is lockSubscriptionsOf for subscriptions named directly.
const lockSubscriptions = `SELECT id FROM subscriptions WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`

// uncount subtracts finished in-flight jobs from their subscriptions'
// counts; it runs in the same statement as the jobs' update (as %s).
const uncount = `
WITH done AS (%s RETURNING d.id, d.subscription_id, d.status),
uncounted AS (
	UPDATE subscriptions s SET in_flight = greatest(s.in_flight - c.n, 0)
	FROM (SELECT subscription_id, count(*) AS n FROM done GROUP BY subscription_id) c
	WHERE s.id = c.subscription_id
)
SELECT id, status FROM done`

func (db *DB) ReleaseJobs(ctx context.Context, leases []store.JobLease) (err error) {
	defer wrap(&err, "ReleaseJobs")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	if len(leases) == 0 {
		return nil
	}
	ids, tokens := leaseArrays(leases)
	// The jobs given back are due at once: other processes are told (a
	// stopping process gives back what it will not start).
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, lockSubscriptionsOf, ids)
		if err != nil {
			return err
		}
		subs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(uncount, `UPDATE delivery_jobs d SET status = 'pending', lease_token = NULL,
			lease_expires_at = NULL, leased_by = NULL, next_attempt_at = $3, updated_at = $3
			FROM unnest($1::text[], $2::text[]) AS v(id, token)
			WHERE d.id = v.id AND d.lease_token = v.token AND d.status IS NOT DISTINCT FROM 'in_flight'`), ids, tokens, db.opts.Stamp()); err != nil {
			return err
		}
		b := &pgx.Batch{}
		db.queueNotify(b, subs)
		return tx.SendBatch(ctx, b).Close()
	})
}

func leaseArrays(leases []store.JobLease) (ids, tokens []string) {
	for _, l := range leases {
		ids, tokens = append(ids, l.JobID), append(tokens, l.LeaseToken)
	}
	return ids, tokens
}

// RenewLeases extends the leases in one statement, fenced on their tokens.
func (db *DB) RenewLeases(ctx context.Context, p store.RenewParams) (_ []string, err error) {
	defer wrap(&err, "RenewLeases")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	if len(p.Leases) == 0 {
		return nil, nil
	}
	ids, tokens := leaseArrays(p.Leases)
	now := db.opts.Stamp()
	// A job whose row another transaction holds (a completion writing its
	// result, a recovery) is skipped, never waited for: renewals then
	// neither block behind completions nor deadlock with them.
	rows, err := db.pool.Query(ctx, `UPDATE delivery_jobs d SET lease_expires_at = $3
		FROM (SELECT j.id FROM delivery_jobs j JOIN unnest($1::text[], $2::text[]) AS v(id, token)
		        ON j.id = v.id AND j.lease_token = v.token
		      WHERE j.status = 'in_flight' ORDER BY j.id FOR UPDATE OF j SKIP LOCKED) s
		WHERE d.id = s.id
		RETURNING d.id`, ids, tokens, now.Add(p.Lease))
	if err != nil {
		return nil, err
	}
	renewed, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if len(renewed) < len(p.Leases) {
		if renewed == nil {
			renewed = []string{} // <> ALL(NULL) would match nothing
		}
		// A skipped job still under this lease is not lost: read (without
		// waiting for its lock) whether the lease is still the caller's;
		// the next round renews it.
		rows, err := db.pool.Query(ctx, `SELECT j.id FROM delivery_jobs j JOIN unnest($1::text[], $2::text[]) AS v(id, token)
			ON j.id = v.id AND j.lease_token = v.token WHERE j.status = 'in_flight' AND j.id <> ALL($3)`, ids, tokens, renewed)
		if err != nil {
			return nil, err
		}
		held, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return nil, err
		}
		renewed = append(renewed, held...)
	}
	return store.Lost(p.Leases, renewed), nil
}

// recoverExpired returns expired jobs (named by $3) to pending or to the
// poison dead letter. A job counts (recoveries and attempts grow) unless
// it is run-ahead behind another job of its subscription still in flight
// (claimed in the same run, or born leased behind it to the same
// dispatcher: an ordered subscription's in-flight jobs have one holder):
// that one was never attempted. The subquery reads the jobs as they were
// before this statement, so of a whole run recovered at once only its
// first job counts.
const recoverExpired = `
WITH done AS (
	UPDATE delivery_jobs d SET
		recoveries = d.recoveries + c.n,
		attempts = d.attempts + c.n,
		status = CASE WHEN c.n = 1 AND d.recoveries + 1 >= $2 THEN 'dead_lettered' ELSE 'pending' END,
		dead_letter_reason = CASE WHEN c.n = 1 AND d.recoveries + 1 >= $2 THEN 'poison' ELSE d.dead_letter_reason END,
		completed_at = CASE WHEN c.n = 1 AND d.recoveries + 1 >= $2 THEN $1::timestamptz END,
		last_error = CASE WHEN c.n = 1 THEN CASE WHEN d.leased_by = ANY($5) THEN 'its process stopped before its result was written: '
			ELSE 'lease expired without a result: ' END || $4 ELSE d.last_error END,
		lease_token = NULL, lease_expires_at = NULL, leased_by = NULL, run_ahead = false, next_attempt_at = $1, updated_at = $1
	FROM (
		SELECT e.id, e.updated_at AS claimed_at, CASE WHEN e.run_ahead AND EXISTS (
			SELECT 1 FROM delivery_jobs o WHERE o.subscription_id = e.subscription_id AND o.status = 'in_flight'
			  AND o.event_sequence < e.event_sequence) THEN 0 ELSE 1 END AS n
		FROM delivery_jobs e WHERE e.id = ANY($3)
	) c
	WHERE d.id = c.id AND d.status IS NOT DISTINCT FROM 'in_flight'
	  AND (d.leased_by = ANY($5) OR d.lease_expires_at < coalesce($6::timestamptz, now()))
	RETURNING d.id, d.subscription_id, d.status, c.n, c.claimed_at
), uncounted AS (
	UPDATE subscriptions s SET in_flight = greatest(s.in_flight - c.n, 0)
	FROM (SELECT subscription_id, count(*) AS n FROM done GROUP BY subscription_id) c
	WHERE s.id = c.subscription_id
)
SELECT id, status, n, claimed_at FROM done`

func (db *DB) RecoverLeases(ctx context.Context, p store.RecoverParams) (_ store.RecoverResult, err error) {
	defer wrap(&err, "RecoverLeases")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	now, leaseNow := db.opts.Stamp(), db.opts.LeaseNow()
	var res store.RecoverResult
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		res = store.RecoverResult{}
		lapsed := []string{} // never NULL: = ANY(NULL) matches nothing, but neither does its NOT
		if p.Lease > 0 {
			rows, err := tx.Query(ctx, lapsedDispatchers, leaseNow, p.Lease, p.Self)
			if err != nil {
				return err
			}
			if lapsed, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				return err
			}
			if lapsed == nil {
				lapsed = []string{}
			}
		}
		rows, err := tx.Query(ctx, expiredJobs, lapsed, leaseNow, max(p.Limit, 1))
		if err != nil {
			return err
		}
		expired, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(lapsed) > 0 {
			// Their jobs are all taken over here: a process that comes back
			// finds its row gone, and that nothing it held is its own.
			if _, err := tx.Exec(ctx, `DELETE FROM dispatchers WHERE id = ANY($1)`, lapsed); err != nil {
				return err
			}
			res.Processes = len(lapsed)
		}
		if len(expired) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, lockSubscriptionsOf, expired); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, recoverExpired, now, p.PoisonThreshold, expired, store.RecoveredAttemptError, lapsed, leaseNow)
		if err != nil {
			return err
		}
		var log attemptArrays
		var rep store.Report
		for rows.Next() {
			var id, status string
			var n int
			var claimedAt time.Time
			if err := rows.Scan(&id, &status, &n, &claimedAt); err != nil {
				return err
			}
			switch {
			case n == 0:
				res.Unstarted++
			case status == string(hub.JobDeadLettered):
				res.Poisoned++
				rep.DeadLettered = append(rep.DeadLettered, id)
			default:
				res.Recovered++
			}
			if n == 1 {
				log.add(id, store.RecoveredAttempt(claimedAt.UTC(), now))
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if len(log.ids) > 0 {
			if _, err := tx.Exec(ctx, insertAttempts, log.args()...); err != nil {
				return err
			}
		}
		return db.report(ctx, tx, rep, now)
	})
	if err != nil {
		return res, err
	}
	if !p.Reconcile {
		return res, nil
	}
	if err := db.reconcileInFlight(ctx); err != nil {
		return res, fmt.Errorf("reconcile in-flight counts: %w", err)
	}
	return res, nil
}

// WakeJobs makes the subscriptions' waiting jobs due now.
func (db *DB) WakeJobs(ctx context.Context, subscriptionIDs []string) (_ int, err error) {
	defer wrap(&err, "WakeJobs")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	if len(subscriptionIDs) == 0 {
		return 0, nil
	}
	now := db.opts.Stamp()
	// The jobs first, then the hold: a claim between the two must not find
	// a held subscription's later jobs due and its earlier ones not yet.
	tag, err := db.pool.Exec(ctx, `UPDATE delivery_jobs SET next_attempt_at = $2, updated_at = $2
		WHERE subscription_id = ANY($1) AND status = 'pending' AND next_attempt_at > $2`, subscriptionIDs, now)
	if err != nil {
		return 0, err
	}
	// Lift their holds and stamp the heal: another process whose breaker
	// for the destination is still open closes it when it claims one of
	// their jobs (Claimed.HealedAt), instead of shedding it again.
	if _, err := db.pool.Exec(ctx, `UPDATE subscriptions SET held_until = NULL, healed_at = $2 WHERE id = ANY($1)`,
		subscriptionIDs, now); err != nil {
		return 0, err
	}
	if tag.RowsAffected() == 0 {
		return 0, nil
	}
	// Other processes are told (the caller wakes its own dispatcher); the
	// jobs are due already, so a lost notification costs only the wait
	// for a safety poll.
	b := &pgx.Batch{}
	db.queueNotify(b, subscriptionIDs)
	db.pool.SendBatch(ctx, b).Close() // the jobs are woken whether or not it is sent
	return int(tag.RowsAffected()), nil
}

// reconcileInFlight repairs in-flight counts that disagree with the jobs
// table (they never should). The counts are recomputed by a statement that
// starts after the subscriptions are locked, so nothing changes them
// meanwhile.
func (db *DB) reconcileInFlight(ctx context.Context) error {
	rows, err := db.pool.Query(ctx, `SELECT s.id FROM subscriptions s
		WHERE s.in_flight <> (SELECT count(*) FROM delivery_jobs j WHERE j.subscription_id = s.id AND j.status = 'in_flight')`)
	if err != nil {
		return err
	}
	drifted, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(drifted) == 0 {
		return err
	}
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT id FROM subscriptions WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`, drifted); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE subscriptions s SET in_flight = (SELECT count(*) FROM delivery_jobs j
			WHERE j.subscription_id = s.id AND j.status = 'in_flight') WHERE s.id = ANY($1)`, drifted)
		return err
	})
}

func (db *DB) DeadLetterOrphans(ctx context.Context) (_ int, err error) {
	defer wrap(&err, "DeadLetterOrphans")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	// Driven from the subscriptions that are off (usually none), so the
	// pending jobs of the healthy ones are never scanned.
	rows, err := db.pool.Query(ctx, `SELECT s.id FROM subscriptions s WHERE (s.deleted_at IS NOT NULL OR NOT s.enabled)
		AND EXISTS (SELECT 1 FROM delivery_jobs j WHERE j.subscription_id = s.id AND j.status = 'pending')`)
	if err != nil {
		return 0, err
	}
	off, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(off) == 0 {
		return 0, err
	}
	now := db.opts.Stamp()
	var dead []string
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE delivery_jobs d SET status = 'dead_lettered',
				dead_letter_reason = CASE WHEN s.deleted_at IS NOT NULL THEN 'subscription_deleted' ELSE 'subscription_disabled' END,
				completed_at = $1, updated_at = $1
			FROM subscriptions s
			WHERE s.id = ANY($2) AND d.subscription_id = s.id AND d.status = 'pending' RETURNING d.id`, now, off)
		if err != nil {
			return err
		}
		if dead, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		return db.report(ctx, tx, store.Report{DeadLettered: dead}, now)
	})
	return len(dead), err
}

// CountJobs: see store.CountJobsSQL.
func (db *DB) CountJobs(ctx context.Context) (_ map[hub.JobStatus]int64, err error) {
	defer wrap(&err, "CountJobs")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	var pending, inFlight, dead int64
	if err := db.pool.QueryRow(ctx, store.CountJobsSQL).Scan(&pending, &inFlight, &dead); err != nil {
		return nil, err
	}
	return store.JobCounts(pending, inFlight, dead), nil
}
