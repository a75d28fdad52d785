package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lerianstudio/streaming-hub/internal/crashpoint"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Write runs one batch of the process's writer (docs/architecture.md, "The
// writer") in one transaction, on one connection:
//
//  1. BEGIN with the batch's settings: synchronous commit when it carries
//     records (their offsets are committed after it), asynchronous for
//     results and statistics alone (dispatchBegin);
//  2. the records' reads (their tenants locked in id order, the keys
//     already stored, the deliverable subscriptions), one round trip;
//  3. one pipelined batch: the subscriptions of the matched jobs and of
//     the results locked together, in id order (so no two writers lock
//     them in opposite orders); the records' writes (events, sequences,
//     jobs, born leases, rejections); the results' writes (fenced on the
//     lease); the gathered statistics; the hand-off claim; COMMIT. When a
//     result dead-letters or may auto-disable, the batch stops before the
//     claim and a second one follows (CompleteJobs' two steps).
//
// The records' writes come before the results', so a job is born leased
// against its subscription's counts as they stood before this batch's
// results: what that keeps from birth, the hand-off claim takes.
func (db *DB) Write(ctx context.Context, p store.WriteParams) (_ store.WriteResult, err error) {
	defer wrap(&err, "Write")
	defer func() { err = classify(err) }()
	if p.Empty() {
		return store.WriteResult{}, nil
	}
	budget := store.BudgetDispatch
	if p.Durable() {
		budget = store.BudgetIngest
	}
	defer db.budgets.use(ctx, budget)()
	now := db.opts.Stamp()

	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return store.WriteResult{}, err
	}
	// A connection left inside a failed transaction is closed by the pool
	// on release, not reused.
	defer conn.Release()
	begin := dispatchBegin
	if p.Durable() {
		begin = ingestTx.BeginQuery
	}
	if _, err := conn.Exec(ctx, begin); err != nil {
		return store.WriteResult{}, err
	}

	var res store.WriteResult
	var m matched
	offer := p.Offer
	w := &pgx.Batch{}
	if len(p.Ingest.Events) > 0 {
		if m, err = db.admitAndMatch(ctx, conn, p.Ingest.Events, now, w, offer, &res.Born, !p.DeferStats); err != nil {
			return store.WriteResult{}, err
		}
		res.Ingest.Outcomes, res.Ingest.Jobs, res.Ingest.Subscriptions = m.outcomes, len(m.jobs), m.subs
		res.Ingest.Tenants = store.AcceptedTenants(p.Ingest.Events, m.outcomes)
	} else {
		offer = nil
	}
	if len(p.Ingest.Rejected) > 0 {
		if err := db.queueRejections(w, p.Ingest.Rejected, now); err != nil {
			return store.WriteResult{}, err
		}
	}

	b := &pgx.Batch{}
	cs := p.Complete.Completions
	var subs []string // the results' subscriptions
	if len(cs) > 0 {
		subs = store.SubscriptionsOf(cs)
		// First, as every transaction taking jobs out of flight
		// (lockSubscriptionsOf); with the matched ones when births may lock
		// those too.
		b.Queue(lockSubscriptions, union(subs, m.subs))
	}
	b.QueuedQueries = append(b.QueuedQueries, w.QueuedQueries...)
	var written []string
	if len(cs) > 0 {
		queueResults(b, cs, subs, now, !p.DeferStats).Query(func(rows pgx.Rows) error {
			var err error
			written, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
				var id, status string
				return id, r.Scan(&id, &status)
			})
			return err
		})
	}
	queueStats(batchWriter{b}, p.Stats)
	var spans []store.OpenSpan
	failing := store.Failing(cs)
	mayDisable := p.Complete.AutoDisable != nil && len(failing) > 0
	// Dead letters and disables are reported (operational events) before
	// the commit, which then needs a second step.
	reports := mayDisable || len(store.DeadLettering(cs, nil)) > 0
	if mayDisable {
		queueOpenSpans(b, failing, time.Time{}, &spans)
	}
	if !reports {
		queueNext(b, p.Complete, now, &res.Complete.Claimed)
		b.Queue("COMMIT")
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return store.WriteResult{}, err
	}
	res.Complete.Fenced = store.Fenced(cs, written)
	if reports {
		if mayDisable {
			res.Complete.Disabled = p.Complete.AutoDisable.Disable(spans, now)
		}
		rep := store.Report{Disabled: store.DisabledIDs(res.Complete.Disabled), DeadLettered: store.DeadLettering(cs, res.Complete.Fenced)}
		b = &pgx.Batch{}
		if queueDisable(b, res.Complete.Disabled, now, &rep.DeadLettered); b.Len() > 0 {
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				return store.WriteResult{}, err
			}
		}
		if err := db.report(ctx, conn, rep, now); err != nil {
			return store.WriteResult{}, err
		}
		b = &pgx.Batch{}
		queueNext(b, p.Complete, now, &res.Complete.Claimed)
		b.Queue("COMMIT")
		if err := conn.SendBatch(ctx, b).Close(); err != nil {
			return store.WriteResult{}, err
		}
	}

	if len(p.Ingest.Events) > 0 && len(cs) > 0 && crashpoint.Lose(crashpoint.LostCommit) {
		// The fault suite: the merged batch's COMMIT went through, its
		// answer is lost with the connection.
		conn.Conn().Close(ctx)
		return store.WriteResult{}, errLostCommit
	}
	if len(m.jobs) > 0 {
		if offer == nil {
			db.wakes.Notify(m.subs) // the transaction told the other processes
		} else {
			pending := store.PendingSubscriptions(m.jobs, res.Born)
			db.wakes.Notify(pending)
			db.notifyAfter(ctx, pending)
		}
	}
	return res, nil
}

// errLostCommit is the error of a COMMIT whose answer the fault suite cut
// off (crashpoint.LostCommit): the connection's, as pgx reports it.
var errLostCommit = errors.New("crashpoint lostcommit: unexpected EOF")

// union is a and b, once each, sorted.
func union(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	out := append(append([]string{}, a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// queueStats queues the gathered statistics: the types seen and the
// rollups, one statement each.
func queueStats(w writer, s store.Stats) {
	if len(s.Types) > 0 {
		queueTypes(w, s.Types)
	}
	if len(s.Rollups) > 0 {
		queueRollupRows(w, s.Rollups)
	}
}

// queueTypes upserts types seen, keeping each one's first sighting.
func queueTypes(w writer, seen []store.TypeSeen) {
	var tenants, types, sources []string
	var majors []int32
	var firsts, lasts []time.Time
	for _, s := range seen {
		tenants, types, sources = append(tenants, s.TenantID), append(types, s.EventType), append(sources, s.Source)
		majors, firsts, lasts = append(majors, int32(s.SchemaMajor)), append(firsts, s.FirstSeenAt), append(lasts, s.LastSeenAt)
	}
	w.write(`INSERT INTO event_types_seen AS t (tenant_id, event_type, schema_major, source, first_seen_at, last_seen_at)
		SELECT v.t, v.e, v.m, v.s, v.f, v.l FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::timestamptz[], $6::timestamptz[])
			AS v(t, e, m, s, f, l)
		ON CONFLICT (tenant_id, event_type, schema_major) DO UPDATE SET source = excluded.source,
			last_seen_at = greatest(t.last_seen_at, excluded.last_seen_at)
		WHERE t.source <> excluded.source OR t.last_seen_at < excluded.last_seen_at`,
		tenants, types, majors, sources, firsts, lasts)
}
