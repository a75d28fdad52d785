package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) Prune(ctx context.Context, p store.PruneParams) (_ store.PruneResult, err error) {
	defer wrap(&err, "Prune")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	if !p.ByPartition {
		return store.Deleters{Jobs: func(ctx context.Context, status hub.JobStatus, before time.Time, batch int) (int, error) {
			return db.pruneJobs(ctx, status, before, batch, "")
		}, Events: func(ctx context.Context, before time.Time, batch int) (int, error) {
			return db.pruneEvents(ctx, before, batch, time.Time{})
		}}.Prune(ctx, p)
	}
	// Whole weeks first; then rows, only in the weeks wholly before the
	// bounds that were kept (and the default partition): the rows of the
	// week a bound falls in wait for their week to go whole.
	dropped, err := db.dropPartitions(ctx, p)
	if err != nil {
		return store.PruneResult{}, fmt.Errorf("partitions: %w", err)
	}
	r, err := store.Deleters{
		Jobs: func(ctx context.Context, status hub.JobStatus, before time.Time, batch int) (int, error) {
			return db.pruneJobs(ctx, status, before, batch, jobsCut(before))
		},
		Events: func(ctx context.Context, before time.Time, batch int) (int, error) {
			return db.pruneEvents(ctx, before, batch, weekStart(before))
		},
	}.Prune(ctx, p)
	r.Partitions = dropped
	return r, err
}

// pruneJobs deletes the oldest terminal jobs of status completed before
// before, and their attempts, in one transaction; with below, only jobs
// whose ids sort below it or that wait in the default partition.
func (db *DB) pruneJobs(ctx context.Context, status hub.JobStatus, before time.Time, batch int, below string) (int, error) {
	n := 0
	cut, args := "", []any{string(status), before, batch}
	if below != "" {
		cut, args = " AND (id < $4 OR tableoid = 'delivery_jobs_default'::regclass)", append(args, below)
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `DELETE FROM delivery_jobs WHERE id IN (
			SELECT id FROM delivery_jobs WHERE status = $1 AND completed_at IS NOT NULL AND completed_at < $2`+cut+`
			ORDER BY completed_at LIMIT $3)
			RETURNING id`, args...)
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

// needed is true for an event some job may still send.
const needed = `EXISTS (SELECT 1 FROM delivery_jobs j WHERE j.tenant_id = e.tenant_id AND j.event_sequence = e.sequence
	AND (j.completed_at IS NULL OR j.status = 'dead_lettered'))`

// pruneEvents deletes the oldest events received before before that no job
// needs. Candidates are locked first (skipping rows a replay holds) and
// checked again by a later statement, which sees jobs committed meanwhile:
// a replay either finds its event gone or keeps it. With cut, only events
// received before it or waiting in the default partition.
func (db *DB) pruneEvents(ctx context.Context, before time.Time, batch int, cut time.Time) (int, error) {
	n := 0
	where, args := "", []any{before, batch}
	if !cut.IsZero() {
		where, args = " AND (received_at < $3 OR tableoid = 'events_default'::regclass)", append(args, cut)
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT tenant_id, sequence FROM events e
			WHERE received_at < $1`+where+` AND NOT `+needed+`
			ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED`, args...)
		if err != nil {
			return err
		}
		var tenants []string
		var seqs []int64
		var t string
		var s int64
		if _, err := pgx.ForEachRow(rows, []any{&t, &s}, func() error {
			tenants, seqs = append(tenants, t), append(seqs, s)
			return nil
		}); err != nil || len(tenants) == 0 {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM events e USING unnest($1::text[], $2::bigint[]) AS old(tenant_id, sequence)
			WHERE e.tenant_id = old.tenant_id AND e.sequence = old.sequence AND NOT `+needed, tenants, seqs)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// Exclusive holds a session-level advisory lock, keyed by the schema and
// name, while fn runs. Every lock of this process is held on one
// connection of its own (the one the budgets leave out of their shares),
// taken while any lock is held; a process that dies loses its session, and
// with it the locks.
func (db *DB) Exclusive(ctx context.Context, name string, fn func(context.Context) error) (bool, error) {
	ok, err := db.locks.lock(ctx, db.pool, name)
	if err != nil || !ok {
		if err != nil {
			err = fmt.Errorf("postgres: Exclusive: %w", err)
		}
		return false, err
	}
	defer db.locks.unlock(ctx, name)
	return true, fn(ctx)
}

const lockKey = `hashtextextended(current_schema() || '/streaming-hub/' || $1, 0)`

// sessionLocks are the advisory locks this process holds, on one session.
type sessionLocks struct {
	mu   sync.Mutex
	conn *pgxpool.Conn // while any lock is held
	held map[string]bool
}

// lock takes name's lock unless this process or another holds it.
func (l *sessionLocks) lock(ctx context.Context, pool *pgxpool.Pool, name string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[name] {
		return false, nil
	}
	if l.conn == nil {
		conn, err := pool.Acquire(ctx)
		if err != nil {
			return false, err
		}
		l.conn, l.held = conn, make(map[string]bool)
	}
	var ok bool
	err := l.conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(`+lockKey+`)`, name).Scan(&ok)
	if ok {
		l.held[name] = true
	}
	l.releaseIfIdle(err)
	return ok, err
}

func (l *sessionLocks) unlock(ctx context.Context, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.held, name)
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := l.conn.Exec(uctx, `SELECT pg_advisory_unlock(`+lockKey+`)`, name)
	l.releaseIfIdle(err)
}

// releaseIfIdle gives the session back when no lock is held on it, and
// ends it after an error: ending the session is what releases its locks
// then (the others held on it are lost with it, as when a process dies).
func (l *sessionLocks) releaseIfIdle(err error) {
	if err != nil {
		l.conn.Conn().Close(context.Background())
		l.conn.Release()
		l.conn, l.held = nil, nil
		return
	}
	if len(l.held) == 0 {
		l.conn.Release()
		l.conn = nil
	}
}
