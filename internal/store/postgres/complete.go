package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// CompleteJobs writes a batch of results: Write with results only, in
// two round trips: BEGIN with its settings (dispatchBegin), then the
// statements and COMMIT as one pipelined batch, each statement's result
// read by its own callback. Job states are fenced on their lease; the
// attempt log and failure spans follow. When auto-disable may fire (it is
// on and a subscription's last attempt in the batch failed), the batch
// stops before the hand-off claim and reads the failing subscriptions'
// spans as they now stand; Go decides which to disable and why, and a
// second batch disables them, claims and commits: still one transaction,
// so the hand-off never claims for a subscription it just disabled.
func (db *DB) CompleteJobs(ctx context.Context, p store.CompleteParams) (store.CompleteResult, error) {
	res, err := db.Write(ctx, store.WriteParams{Complete: p})
	return res.Complete, err
}

// dispatchBegin begins a completion's transaction with the dispatch
// settings (queueDispatchSettings) in the round trip of its BEGIN, so
// that they hold from the transaction's first statement on: set by that
// statement itself they came too late for it, and PostgreSQL planned the
// lock afresh at every completion (0.12 ms of CPU each). The round trip
// is the completer's, behind the deliveries; the statements it saves are
// PostgreSQL's.
const dispatchBegin = "BEGIN; SET LOCAL synchronous_commit = off; SET LOCAL enable_bitmapscan = off; " +
	"SET LOCAL enable_seqscan = off; SET LOCAL plan_cache_mode = force_generic_plan"

// writeResults updates the jobs' states, fenced on their leases; its
// RETURNING (done) is what was written.
const writeResults = `done AS (
	UPDATE delivery_jobs d SET
		status = v.status, attempts = d.attempts + v.attempted::int, next_attempt_at = v.next_at,
		dead_letter_reason = v.reason, last_error = v.last_error,
		lease_token = NULL, lease_expires_at = NULL, leased_by = NULL, updated_at = $8::timestamptz,
		completed_at = CASE WHEN v.status IN ('succeeded', 'dead_lettered') THEN $8::timestamptz END
	FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[], $7::bool[])
		AS v(id, token, status, next_at, reason, last_error, attempted)
	WHERE d.id = v.id AND d.lease_token = v.token AND d.status IS NOT DISTINCT FROM 'in_flight'
	RETURNING d.id, d.subscription_id, d.status
)`

// writeSubscriptions is the one update of the batch's subscriptions (a
// statement may modify a row only once): the jobs written come out of
// their in-flight counts; failure spans move (a success resets a span to
// the failures after it, often none; failures alone extend it; the version
// moves only when the span does); and an ordered subscription whose job a
// breaker shed is held until that job comes due (store.ShedHolds; a hold
// only ever moves later). Rows with nothing to change are not written.
const writeSubscriptions = `subs AS (
	UPDATE subscriptions s SET
		in_flight = greatest(s.in_flight - coalesce(c.n, 0), 0),
		failure_first_at = CASE WHEN sp.id IS NULL THEN s.failure_first_at
			WHEN sp.reset THEN sp.first ELSE coalesce(s.failure_first_at, sp.first) END,
		failure_last_at = CASE WHEN sp.id IS NULL THEN s.failure_last_at
			WHEN sp.reset THEN sp.last ELSE greatest(s.failure_last_at, sp.last) END,
		version = s.version + CASE WHEN sp.id IS NOT NULL AND (NOT sp.reset OR s.failure_first_at IS DISTINCT FROM sp.first
			OR s.failure_last_at IS DISTINCT FROM sp.last) THEN 1 ELSE 0 END,
		held_until = CASE WHEN h.sub IS NOT NULL AND s.max_in_flight <= 1 THEN greatest(s.held_until, h.until) ELSE s.held_until END
	FROM unnest($1::text[]) AS b(id)
	LEFT JOIN (SELECT subscription_id, count(*) AS n FROM done GROUP BY subscription_id) c ON c.subscription_id = b.id
	LEFT JOIN unnest($2::text[], $3::bool[], $4::timestamptz[], $5::timestamptz[]) AS sp(id, reset, first, last) ON sp.id = b.id
	LEFT JOIN unnest($6::text[], $7::timestamptz[]) AS h(sub, until) ON h.sub = b.id
	WHERE s.id = b.id AND (c.n IS NOT NULL
		OR sp.id IS NOT NULL AND (NOT sp.reset OR s.failure_first_at IS DISTINCT FROM sp.first OR s.failure_last_at IS DISTINCT FROM sp.last)
		OR h.sub IS NOT NULL AND s.max_in_flight <= 1)
)`

// queueResults queues, as one statement (composite), every write of a
// batch of results: the jobs' states, fenced on their leases (returned:
// the jobs written), the attempt log (logged even when fenced: the
// request was sent), the health rollups (unless the writer gathers them),
// and the subscriptions' counts,
// failure spans and shed holds. The subscriptions are locked already
// (lockSubscriptions).
func queueResults(b *pgx.Batch, cs []store.Completion, subs []string, now time.Time, rollups bool) *pgx.QueuedQuery {
	n := len(cs)
	ids, tokens, statuses, reasons, errs := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	nexts := make([]time.Time, n)
	attempted := make([]bool, n)
	for i, c := range cs {
		ids[i], tokens[i], statuses[i], reasons[i], errs[i] = c.JobID, c.LeaseToken, string(c.Status), c.DeadLetterReason, c.LastError
		nexts[i], attempted[i] = c.NextAttemptAt, c.Attempt != nil
		if nexts[i].IsZero() {
			nexts[i] = now
		}
	}
	var c composite
	c.with(writeResults, ids, tokens, statuses, nexts, reasons, errs, attempted, now)
	if a := attemptsOf(cs); len(a.ids) > 0 {
		c.write(insertAttempts, a.args()...)
	}
	if rollups {
		queueRollups(&c, cs)
	}
	spanIDs, resets, firsts, lasts := spanArrays(store.Spans(cs))
	holds := store.ShedHolds(cs, now)
	holdSubs, untils := make([]string, len(holds)), make([]time.Time, len(holds))
	for i, h := range holds {
		holdSubs[i], untils[i] = h.SubscriptionID, h.Until
	}
	c.with(writeSubscriptions, subs, spanIDs, resets, firsts, lasts, holdSubs, untils)
	return c.queue(b, `SELECT id, status FROM done`)
}

// queueNext queues the hand-off claim, when p asks for one. The
// subscriptions are locked already (by this transaction): the claim's own
// lock on them succeeds at once, and it reads their counts as just lowered.
func queueNext(b *pgx.Batch, p store.CompleteParams, now time.Time, out *[]store.Claimed) {
	if p.Next == nil {
		return
	}
	next := *p.Next
	next.Subscriptions = store.NextTargets(p.Completions, p.Next.Subscriptions)
	queueClaim(b, next, now, out)
}

// insertAttempts logs attempts given as column arrays (attemptArrays). An
// attempt logged already is left as it is: a batch written again after a
// COMMIT whose answer was lost must not fail on its own rows.
const insertAttempts = `INSERT INTO delivery_attempts (id, job_id, started_at, duration_ms, status_code, error, response_body,
		request_headers, response_headers)
	SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::int[], $5::int[], $6::text[], $7::text[],
		$8::text[], $9::text[])
	ON CONFLICT DO NOTHING`

// ResultsRecorded: see store.Dispatch. The attempt log is looked up by
// (job, attempt), its key, so each look-up touches one partition.
func (db *DB) ResultsRecorded(ctx context.Context, cs []store.Completion) (_ []string, err error) {
	defer wrap(&err, "ResultsRecorded")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	if len(cs) == 0 {
		return nil, nil
	}
	jobs, tokens, attempts := make([]string, len(cs)), make([]string, len(cs)), make([]string, len(cs))
	for i, c := range cs {
		jobs[i], tokens[i] = c.JobID, c.LeaseToken
		if c.Attempt != nil {
			attempts[i] = c.Attempt.ID
		}
	}
	rows, err := db.pool.Query(ctx, `SELECT v.job FROM unnest($1::text[], $2::text[], $3::text[]) AS v(job, token, attempt)
		WHERE NOT EXISTS (SELECT 1 FROM delivery_jobs d WHERE d.id = v.job AND d.lease_token = v.token AND d.status = 'in_flight')
		  AND (v.attempt = '' OR EXISTS (SELECT 1 FROM delivery_attempts a WHERE a.job_id = v.job AND a.id = v.attempt))`,
		jobs, tokens, attempts)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// attemptArrays are attempts as column arrays, for one INSERT from unnest.
type attemptArrays struct {
	ids, jobs, errs, bodies []string
	reqHeaders, respHeaders []*string // JSON, NULL when none (store.AttemptHeaders)
	started                 []time.Time
	ms, status              []int32
}

func attemptsOf(cs []store.Completion) attemptArrays {
	var a attemptArrays
	for _, c := range cs {
		if c.Attempt != nil {
			a.add(c.JobID, c.Attempt)
		}
	}
	return a
}

// args are insertAttempts' arguments.
func (a attemptArrays) args() []any {
	return []any{a.ids, a.jobs, a.started, a.ms, a.status, a.errs, a.bodies, a.reqHeaders, a.respHeaders}
}

func (a *attemptArrays) add(jobID string, at *hub.Attempt) {
	a.ids, a.jobs = append(a.ids, at.ID), append(a.jobs, jobID)
	a.started = append(a.started, at.StartedAt)
	a.ms, a.status = append(a.ms, int32(at.Duration.Milliseconds())), append(a.status, int32(at.StatusCode))
	a.errs, a.bodies = append(a.errs, at.Error), append(a.bodies, at.ResponseBody)
	req, resp := store.AttemptHeaders(at)
	a.reqHeaders, a.respHeaders = append(a.reqHeaders, req), append(a.respHeaders, resp)
}

// spanArrays are failure-span updates as column arrays.
func spanArrays(spans []store.SpanUpdate) (ids []string, resets []bool, firsts, lasts []*time.Time) {
	ids, resets = []string{}, []bool{}
	for _, s := range spans {
		ids, resets = append(ids, s.SubscriptionID), append(resets, s.Reset)
		firsts, lasts = append(firsts, s.First), append(lasts, s.Last)
	}
	return ids, resets, firsts, lasts
}

// queueOpenSpans reads, in id order, the open failure spans of the enabled,
// undeleted subscriptions among ids that began by cutoff (any, when cutoff
// is zero), locking them unless this transaction holds them already; the
// spans land in *out.
func queueOpenSpans(b *pgx.Batch, ids []string, cutoff time.Time, out *[]store.OpenSpan) {
	var before *time.Time
	if !cutoff.IsZero() {
		before = &cutoff
	}
	b.Queue(`SELECT id, failure_first_at, failure_last_at FROM subscriptions
		WHERE id = ANY($1) AND enabled AND deleted_at IS NULL AND failure_first_at IS NOT NULL AND failure_last_at IS NOT NULL
		  AND ($2::timestamptz IS NULL OR failure_first_at <= $2)
		ORDER BY id FOR NO KEY UPDATE`, ids, before).Query(func(rows pgx.Rows) error {
		var err error
		*out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.OpenSpan, error) {
			var s store.OpenSpan
			err := r.Scan(&s.SubscriptionID, &s.First, &s.Last)
			s.First, s.Last = s.First.UTC(), s.Last.UTC()
			return s, err
		})
		return err
	})
}

// queueDisable turns off the subscriptions auto-disable chose, storing the
// reason each was given, and dead-letters their waiting jobs, whose ids it
// adds to *dead.
func queueDisable(b *pgx.Batch, disabled []store.Disabled, now time.Time, dead *[]string) {
	if len(disabled) == 0 {
		return
	}
	ids, reasons := store.DisabledIDs(disabled), make([]string, len(disabled))
	for i, d := range disabled {
		reasons[i] = d.Reason
	}
	b.Queue(`UPDATE subscriptions s SET enabled = false, disabled_at = $3, disabled_reason = v.reason, version = s.version + 1
		FROM unnest($1::text[], $2::text[]) AS v(id, reason) WHERE s.id = v.id`, ids, reasons, now)
	b.Queue(deadLetterPendingSQL, ids, hub.DeadLetterSubscriptionDisabled, now).Query(func(rows pgx.Rows) error {
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		*dead = append(*dead, ids...)
		return err
	})
}

// AutoDisable reads the spans that may be due without a lock, then locks
// those subscriptions (in id order, as completions do), reads their spans
// again and disables those Go finds due.
func (db *DB) AutoDisable(ctx context.Context, g store.AutoDisable) (_ []store.Disabled, err error) {
	defer wrap(&err, "AutoDisable")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	now := db.opts.Stamp()
	rows, err := db.pool.Query(ctx, `SELECT id FROM subscriptions
		WHERE enabled AND deleted_at IS NULL AND failure_first_at <= $1`, g.Cutoff(now))
	if err != nil {
		return nil, err
	}
	candidates, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(candidates) == 0 {
		return nil, err
	}
	var disabled []store.Disabled
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var spans []store.OpenSpan
		b := &pgx.Batch{}
		queueOpenSpans(b, candidates, g.Cutoff(now), &spans)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		disabled = g.Disable(spans, now)
		rep := store.Report{Disabled: store.DisabledIDs(disabled)}
		b = &pgx.Batch{}
		queueDisable(b, disabled, now, &rep.DeadLettered)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return db.report(ctx, tx, rep, now)
	})
	if err != nil {
		return nil, err
	}
	return disabled, nil
}
