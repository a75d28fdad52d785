package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// bornCTEs insert matching's jobs and lease at birth, to the dispatcher
// that offered room (store.BirthOffer), those it may take
// (docs/architecture.md, "The writer"). They join the ingest
// transaction's other writes in one statement (composite):
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
const bornCTEs = `born_v AS (
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]) WITH ORDINALITY AS v(id, t, s, seq, e, ord)
), cand AS (
	SELECT s.id, s.in_flight, s.max_in_flight FROM subscriptions s
	WHERE s.id IN (SELECT v.s FROM born_v v) AND NOT (s.id = ANY($8))
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
	FROM born_v v LEFT JOIN cand c ON c.id = v.s
), born AS (
	SELECT id, ordered AND behind AS run_ahead
	FROM (SELECT id, fits, ordered, behind, sum(fits::int) OVER (ORDER BY ord) AS n FROM ranked) r
	WHERE fits AND n <= $10
), ins AS (
	INSERT INTO delivery_jobs (id, tenant_id, subscription_id, event_sequence, event_id, status,
		next_attempt_at, enqueued_at, created_at, updated_at, lease_token, lease_expires_at, run_ahead, leased_by)
	SELECT v.id, v.t, v.s, v.seq, v.e, CASE WHEN b.id IS NULL THEN 'pending' ELSE 'in_flight' END, $6, $6, $6, $6,
		CASE WHEN b.id IS NULL THEN NULL ELSE $7 END, CASE WHEN b.id IS NULL THEN NULL ELSE $11::timestamptz END,
		coalesce(b.run_ahead, false), CASE WHEN b.id IS NULL THEN NULL ELSE nullif($9, '') END
	FROM born_v v LEFT JOIN born b ON b.id = v.id
	RETURNING ` + jobColumns + `, run_ahead
), counted AS (
	UPDATE subscriptions s SET in_flight = s.in_flight + c.n, leased_by = $9
	FROM (SELECT subscription_id, count(*) AS n FROM ins WHERE status = 'in_flight' GROUP BY subscription_id) c
	WHERE s.id = c.subscription_id
)`

// bornSelect returns the born jobs with their subscriptions; their events
// are the batch's, in memory.
var bornSelect = `SELECT ` + prefixed("c.", jobColumns) + `, ` + prefixed("s.", subscriptionColumns) + `, s.healed_at, c.run_ahead
FROM ins c JOIN subscriptions s ON s.id = c.subscription_id
WHERE c.status = 'in_flight'
ORDER BY c.event_sequence, c.id`

// queueJobsBorn adds bornCTEs for matching's jobs to c and queues c in b
// with bornSelect as its query; the born jobs, with their events from
// the batch (events, outcomes), land in *born as b's results are read.
func queueJobsBorn(c *composite, b *pgx.Batch, jobs []hub.Job, events []hub.Event, outcomes []store.Outcome,
	o *store.BirthOffer, now time.Time, born *[]store.Claimed) {
	ids, tenants, subs, eventIDs := make([]string, len(jobs)), make([]string, len(jobs)), make([]string, len(jobs)), make([]string, len(jobs))
	seqs := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i], tenants[i], subs[i], seqs[i], eventIDs[i] = j.ID, j.TenantID, j.SubscriptionID, j.EventSequence, j.EventID
	}
	exclude := append([]string{}, o.Exclude...) // never NULL: NOT (id = ANY(NULL)) excludes everything
	c.with(bornCTEs, ids, tenants, subs, seqs, eventIDs, jobs[0].CreatedAt, o.Token, exclude, o.Owner, o.Room, now.Add(o.Lease))
	byKey := make(map[store.EventKey]hub.Event, len(events))
	for i, ev := range events {
		if outcomes[i].Verdict == hub.Accept {
			ev.Sequence, ev.ReceivedAt = outcomes[i].Sequence, now
			byKey[store.EventKey{TenantID: ev.TenantID, ID: ev.ID}] = ev
		}
	}
	c.queue(b, bornSelect).Query(func(rows pgx.Rows) error {
		var err error
		*born, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Claimed, error) {
			var behind bool
			cl, err := scanLeased(r, o.Token, false, &behind)
			cl.Behind = behind
			cl.Event = byKey[store.EventKey{TenantID: cl.Job.TenantID, ID: cl.Job.EventID}]
			return cl, err
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
	db.pool.Exec(ctx, notifyJobs, db.notifyArgs(subs)...)
}
