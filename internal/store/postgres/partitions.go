package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Time partitions (docs/performance.md, migration 019): events, delivery_jobs and
// delivery_attempts have one partition per week (Monday 00:00 UTC), named
// <table>_wYYYYMMDD after the week's first day, and a default partition.

var _ store.Partitioner = (*DB)(nil)

const week = 7 * 24 * time.Hour

// weekStart is the Monday 00:00 UTC on or before t.
func weekStart(t time.Time) time.Time {
	d := t.UTC().Truncate(24 * time.Hour)
	return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
}

// partitionLockTimeout bounds the wait for the tables' locks when a
// partition is made or dropped: a long query in the way makes the task
// try again (a few times, then at its next pass) rather than queue the
// hub's queries behind it. It is under PostgreSQL's deadlock_timeout (1s):
// were the task ever in a cycle with the hub's queries, it is the task
// that gives up, not a claim or an ingest.
const partitionLockTimeout = "500ms"

const partitionsLock = `SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.streaming-hub.partitions'))`

// EnsurePartitions makes the weeks from now's to weeksAhead later, each
// table's week in a transaction of its own. A table whose locks stay busy
// through a few tries is left for the next pass (store.ErrPartitionsBusy)
// and the others are made. Each try holds a connection of the dispatch
// budget only for its own transaction (at most the lock timeout), never
// through the pass or its pauses: with a small pool that budget may be one
// connection, and the lease renewals and result writes queued behind a
// whole pass would let a live process's leases expire.
func (db *DB) EnsurePartitions(ctx context.Context, now time.Time, weeksAhead int) (made int, err error) {
	defer wrap(&err, "EnsurePartitions")
	busy := 0
	for i := 0; i <= weeksAhead; i++ {
		// One table per transaction: holding one table's default
		// partition while waiting for another's could close a cycle with
		// a claim (jobs, then events) or an ingest (events, then jobs).
		for _, parent := range []string{"events", "delivery_jobs", "delivery_attempts"} {
			n, err := db.addWeek(ctx, weekStart(now).Add(time.Duration(i)*week), parent)
			switch {
			case lockNotAvailable(err):
				busy++
			case err != nil:
				return made, err
			}
			made += n
		}
	}
	if busy > 0 {
		return made, fmt.Errorf("%w (%d of them)", store.ErrPartitionsBusy, busy)
	}
	return made, nil
}

// addWeek makes parent's partition of the week starting ws unless it
// exists, trying a few times, a little apart, when the table's locks are
// not had within partitionLockTimeout.
func (db *DB) addWeek(ctx context.Context, ws time.Time, parent string) (n int, err error) {
	for try := 1; ; try++ {
		release := db.budgets.use(ctx, store.BudgetDispatch)
		err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, partitionsLock); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+partitionLockTimeout+`'`); err != nil {
				return err
			}
			return tx.QueryRow(ctx, `SELECT streaming_hub_add_week($1, $2)`, ws, parent).Scan(&n)
		})
		release()
		if !lockNotAvailable(err) || try == 3 {
			return n, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Duration(try) * 200 * time.Millisecond):
		}
	}
}

// ensureWeeks makes this week's and next week's partitions in the
// migration's transaction, so a new schema receives into partitions at
// once; the periodic task keeps more ahead.
func ensureWeeks(ctx context.Context, tx pgx.Tx, now time.Time) error {
	for _, w := range []time.Time{weekStart(now), weekStart(now).Add(week)} {
		if _, err := tx.Exec(ctx, `SELECT streaming_hub_add_week($1)`, w); err != nil {
			return err
		}
	}
	return nil
}

// weeks lists the weekly partitions of parent by their first day, oldest
// first.
func (db *DB) weeks(ctx context.Context, parent string) ([]time.Time, error) {
	rows, err := db.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = to_regclass($1)`, parent)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var out []time.Time
	for _, n := range names {
		day, ok := strings.CutPrefix(n, parent+"_w")
		if !ok {
			continue // the default partition
		}
		t, err := time.Parse("20060102", day)
		if err != nil {
			continue
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out, nil
}

func partitionName(parent string, ws time.Time) string {
	return parent + "_w" + ws.Format("20060102")
}

// jobsWeekKept: a week of jobs holds a job that is not final, or one the
// bounds keep. Each probe is answered by a partial or the completion
// index of the week alone.
const jobsWeekKept = `SELECT EXISTS (SELECT 1 FROM %[1]s WHERE status = 'pending')
	OR EXISTS (SELECT 1 FROM %[1]s WHERE status = 'in_flight')
	OR EXISTS (SELECT 1 FROM %[1]s WHERE completed_at IS NULL)
	OR EXISTS (SELECT 1 FROM %[1]s WHERE status = 'succeeded' AND completed_at >= $1)
	OR EXISTS (SELECT 1 FROM %[1]s WHERE status = 'dead_lettered' AND completed_at >= $2)`

// eventsWeekKept: a week of events holds one that a job may still send
// (the needed jobs are the backlog and the dead letters: few).
const eventsWeekKept = `SELECT EXISTS (SELECT 1 FROM delivery_jobs j JOIN %s e
	ON e.tenant_id = j.tenant_id AND e.sequence = j.event_sequence
	WHERE j.completed_at IS NULL OR j.status = 'dead_lettered')`

// dropPartitions drops the weeks lying wholly before their bounds in which
// nothing is kept: a week of jobs (with its attempts) whose jobs are all
// final and past their status's bound, a week of events no job needs. The
// check runs again under the tables' locks before the drop, so a job
// committed meanwhile (a replay) keeps its event.
func (db *DB) dropPartitions(ctx context.Context, p store.PruneParams) (int, error) {
	dropped := 0
	if !p.SucceededBefore.IsZero() && !p.DeadLettersBefore.IsZero() {
		bound := p.SucceededBefore
		if p.DeadLettersBefore.Before(bound) {
			bound = p.DeadLettersBefore
		}
		weeks, err := db.weeks(ctx, "delivery_jobs")
		if err != nil {
			return dropped, err
		}
		for _, ws := range weeks {
			if ws.Add(week).After(bound) {
				break
			}
			jobs, attempts := partitionName("delivery_jobs", ws), partitionName("delivery_attempts", ws)
			check := fmt.Sprintf(jobsWeekKept, pgx.Identifier{jobs}.Sanitize())
			ok, err := db.drop(ctx, check, []any{p.SucceededBefore, p.DeadLettersBefore},
				[]string{"delivery_jobs", "delivery_attempts"}, []string{jobs, attempts})
			if err != nil {
				return dropped, err
			}
			if ok {
				dropped += 2
			}
		}
	}
	if !p.EventsBefore.IsZero() {
		weeks, err := db.weeks(ctx, "events")
		if err != nil {
			return dropped, err
		}
		for _, ws := range weeks {
			if ws.Add(week).After(p.EventsBefore) {
				break
			}
			events := partitionName("events", ws)
			check := fmt.Sprintf(eventsWeekKept, pgx.Identifier{events}.Sanitize())
			ok, err := db.drop(ctx, check, nil, []string{"events"}, []string{events})
			if err != nil {
				return dropped, err
			}
			if ok {
				dropped++
			}
		}
	}
	return dropped, nil
}

// drop drops parts unless kept says one must stay: kept runs first without
// locks (a kept week costs no lock), then again holding the parents and
// the parts, and the parts go if it still says false. A lock not had
// within partitionLockTimeout leaves them for the next pass.
func (db *DB) drop(ctx context.Context, kept string, args []any, parents, parts []string) (bool, error) {
	var k bool
	if err := db.pool.QueryRow(ctx, kept, args...).Scan(&k); err != nil || k {
		return false, err
	}
	var tables []string
	for _, t := range parents {
		tables = append(tables, "ONLY "+pgx.Identifier{t}.Sanitize())
	}
	for _, t := range parts {
		tables = append(tables, pgx.Identifier{t}.Sanitize())
	}
	dropped := false
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '`+partitionLockTimeout+`'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(tables, ", ")+` IN ACCESS EXCLUSIVE MODE`); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, kept, args...).Scan(&k); err != nil || k {
			return err
		}
		if _, err := tx.Exec(ctx, `DROP TABLE `+strings.Join(tables[len(parents):], ", ")); err != nil {
			return err
		}
		dropped = true
		return nil
	})
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available
		return false, nil
	}
	return dropped, err
}

// jobsCut is the lowest job id of the week holding before: with
// ByPartition, rows are deleted only below it (in weeks wholly before the
// bound that were kept, and in the default partition).
func jobsCut(before time.Time) string { return hub.IDPrefixAt("dlv", weekStart(before)) }

// lockNotAvailable reports a lock_timeout that expired (55P03): the
// tables were busy; trying again soon may find them free.
func lockNotAvailable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}
