package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// insertJobsBorn inserts matching's jobs and leases at birth, to the
// dispatcher that offered room (store.BirthOffer), those it may take
// (docs/architecture.md, "The commit protocol"), in one statement:
//
//   - cand locks the jobs' subscriptions that may take born jobs, in id
//     order, FOR NO KEY UPDATE, as completions do: a completion writing
//     their results (a millisecond or two) is waited for, not skipped, or
//     a busy ordered subscription would fall back to claims at every
//     collision. (Claims skip locked rows and never wait. Only a
//     completion or recovery that also emits operational events locks a
//     tenant after subscriptions, the reverse of ingest's order; such a
//     rare deadlock is broken by PostgreSQL and the loser retried whole,
//     like any failed ingest or result write.) Not held by a breaker's
//     shed, no running backfill, no rate limit, not excluded by the
//     offer; with a free slot; and for an ordered one (max_in_flight 1) no
//     pending job and nothing in flight but what the offering dispatcher
//     leased (leased_by).
//   - ranked and born pick, in arrival order, the jobs that fit their
//     subscription's free slots (an ordered one takes every job of the
//     batch, one behind the other) and the offer's room.
//   - ins writes every job: born ones in flight under the offer's token,
//     run-ahead when something of their ordered subscription is ahead of
//     them; the rest pending and due.
//   - counted adds the born jobs to their subscriptions' in-flight counts
//     and marks them leased by the dispatcher.
//
// It returns the born jobs with their events and subscriptions, as a
// claim does.
var insertJobsBorn = `
WITH v AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]) WITH ORDINALITY AS v(id, t, s, seq, e, ord)
), cand AS (
	SELECT s.id, s.in_flight, s.max_in_flight FROM subscriptions s
	WHERE s.id IN (SELECT v.s FROM v) AND NOT (s.id = ANY($8))
	  AND s.enabled AND s.verification_state = 'active' AND s.deleted_at IS NULL
	  AND (s.held_until IS NULL OR s.held_until <= $6) AND s.backfill_hold IS NULL AND s.rate_limit_per_second = 0
	  AND (s.max_in_flight > 1 AND s.in_flight < s.max_in_flight
	    OR s.max_in_flight <= 1 AND (s.in_flight = 0 OR s.leased_by = $9)
	      AND NOT EXISTS (SELECT 1 FROM delivery_jobs p WHERE p.subscription_id = s.id AND p.status = 'pending'))
	ORDER BY s.id
	FOR NO KEY UPDATE OF s
), ranked AS (
	SELECT v.id, v.ord, c.max_in_flight <= 1 AS ordered,
		c.id IS NOT NULL AND (c.max_in_flight <= 1
			OR row_number() OVER (PARTITION BY v.s ORDER BY v.seq) <= c.max_in_flight - c.in_flight) AS fits,
		c.in_flight > 0 OR row_number() OVER (PARTITION BY v.s ORDER BY v.seq) > 1 AS behind
	FROM v LEFT JOIN cand c ON c.id = v.s
), born AS (
	SELECT id, ordered AND behind AS run_ahead
	FROM (SELECT id, fits, ordered, behind, sum(fits::int) OVER (ORDER BY ord) AS n FROM ranked) r
	WHERE fits AND n <= $10
), ins AS (
	INSERT INTO delivery_jobs (id, tenant_id, subscription_id, event_sequence, event_id, status,
		next_attempt_at, enqueued_at, created_at, updated_at, lease_token, lease_expires_at, run_ahead)
	SELECT v.id, v.t, v.s, v.seq, v.e, CASE WHEN b.id IS NULL THEN 'pending' ELSE 'in_flight' END, $6, $6, $6, $6,
		CASE WHEN b.id IS NULL THEN NULL ELSE $7 END, CASE WHEN b.id IS NULL THEN NULL ELSE $11::timestamptz END,
		coalesce(b.run_ahead, false)
	FROM v LEFT JOIN born b ON b.id = v.id
	RETURNING ` + jobColumns + `, run_ahead
), counted AS (
	UPDATE subscriptions s SET in_flight = s.in_flight + c.n, leased_by = $9
	FROM (SELECT subscription_id, count(*) AS n FROM ins WHERE status = 'in_flight' GROUP BY subscription_id) c
	WHERE s.id = c.subscription_id
)
SELECT ` + prefixed("c.", jobColumns) + `, ` + prefixed("e.", eventSelect) + `, ` + prefixed("s.", subscriptionColumns) + `,
	s.healed_at, c.run_ahead
FROM ins c
JOIN events e ON e.tenant_id = c.tenant_id AND e.sequence = c.event_sequence
JOIN subscriptions s ON s.id = c.subscription_id
WHERE c.status = 'in_flight'
ORDER BY c.event_sequence, c.id`

// queueJobsBorn queues insertJobsBorn for matching's jobs; the born jobs
// land in *born as the batch's results are read.
func queueJobsBorn(b *pgx.Batch, jobs []hub.Job, o *store.BirthOffer, now time.Time, born *[]store.Claimed) {
	if len(jobs) == 0 {
		return
	}
	ids, tenants, subs, eventIDs := make([]string, len(jobs)), make([]string, len(jobs)), make([]string, len(jobs)), make([]string, len(jobs))
	seqs := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i], tenants[i], subs[i], seqs[i], eventIDs[i] = j.ID, j.TenantID, j.SubscriptionID, j.EventSequence, j.EventID
	}
	exclude := append([]string{}, o.Exclude...) // never NULL: NOT (id = ANY(NULL)) excludes everything
	b.Queue(insertJobsBorn, ids, tenants, subs, seqs, eventIDs, jobs[0].CreatedAt, o.Token, exclude, o.Owner, o.Room,
		now.Add(o.Lease)).Query(func(rows pgx.Rows) error {
		var err error
		*born, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Claimed, error) {
			var behind bool
			c, err := scanClaimed(r, o.Token, &behind)
			c.Behind = behind
			return c, err
		})
		return err
	})
}

// notifyAfter tells other processes, after the ingest transaction, of
// the subscriptions whose new jobs were written pending. It is not part
// of the transaction (which jobs were born is known only from its
// answer): a process that dies before it is sent leaves them to the
// other processes' idle poll. A failure is only logged by the caller's
// next poll finding them anyway.
func (db *DB) notifyAfter(ctx context.Context, subs []string) {
	if len(subs) == 0 {
		return
	}
	ids := strings.Join(subs, ",")
	if len(ids) > maxNotifyIDs {
		ids = "*"
	}
	db.pool.Exec(ctx, `SELECT pg_notify('`+jobsChannel+`', current_schema() || ' ' || $1::text)`, db.origin+" "+ids)
}
