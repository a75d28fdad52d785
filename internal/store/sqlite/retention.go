package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) Prune(ctx context.Context, p store.PruneParams) (_ store.PruneResult, err error) {
	defer wrap(&err, "Prune")
	return store.Deleters{Jobs: db.pruneJobs, Events: db.pruneEvents}.Prune(ctx, p)
}

// pruneEvents needs no locking: with one writer, nothing can make a job
// need these events between the check and the delete.
func (db *DB) pruneEvents(ctx context.Context, before time.Time, batch int) (int, error) {
	return db.exec(ctx, `DELETE FROM events WHERE rowid IN (
		SELECT e.rowid FROM events e WHERE e.received_at < ? AND NOT EXISTS (
			SELECT 1 FROM delivery_jobs j WHERE j.tenant_id = e.tenant_id AND j.event_sequence = e.sequence
			AND (j.completed_at IS NULL OR j.status = 'dead_lettered'))
		ORDER BY e.received_at LIMIT ?)`, micros(before), batch)
}

func (db *DB) exec(ctx context.Context, query string, args ...any) (int, error) {
	n := 0
	err := db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		affected, err := res.RowsAffected()
		n = int(affected)
		return err
	})
	return n, err
}

// pruneJobs deletes the oldest terminal jobs of status completed before
// before, and their attempts, in one transaction.
func (db *DB) pruneJobs(ctx context.Context, status hub.JobStatus, before time.Time, batch int) (int, error) {
	n := 0
	err := db.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `DELETE FROM delivery_jobs WHERE id IN (
			SELECT id FROM delivery_jobs WHERE status = ? AND completed_at IS NOT NULL AND completed_at < ?
			ORDER BY completed_at LIMIT ?) RETURNING id`, string(status), micros(before), batch)
		if err != nil {
			return err
		}
		ids, err := collect(rows, func(r scanner) (string, error) {
			var id string
			return id, r.Scan(&id)
		})
		if err != nil {
			return err
		}
		n = len(ids)
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `DELETE FROM delivery_attempts WHERE job_id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// An SQLite database serves one process, so Exclusive is a lock in memory,
// one per name, shared by every DB of the process.
var exclusive sync.Map // name -> *sync.Mutex

func (db *DB) Exclusive(ctx context.Context, name string, fn func(context.Context) error) (bool, error) {
	mu, _ := exclusive.LoadOrStore(db.path+"\x00"+name, new(sync.Mutex))
	if !mu.(*sync.Mutex).TryLock() {
		return false, nil
	}
	defer mu.(*sync.Mutex).Unlock()
	return true, fn(ctx)
}
