package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Heartbeat renews (or registers) the process's heartbeat. SQLite serves
// one process, so its clock is the database's.
func (db *DB) Heartbeat(ctx context.Context, id string, register bool) (_ bool, err error) {
	defer wrap(&err, "Heartbeat")
	now := micros(db.opts.Stamp())
	var n int64
	err = db.tx(ctx, func(tx *sql.Tx) error {
		q := `UPDATE dispatchers SET heartbeat_at = ?2 WHERE id = ?1`
		if register {
			q = `INSERT INTO dispatchers (id, heartbeat_at, started_at) VALUES (?1, ?2, ?2)
				ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`
		}
		r, err := tx.ExecContext(ctx, q, id, now)
		if err != nil {
			return err
		}
		n, err = r.RowsAffected()
		return err
	})
	return n == 1, err
}

// Deregister deletes a stopping process's heartbeat.
func (db *DB) Deregister(ctx context.Context, id string) (err error) {
	defer wrap(&err, "Deregister")
	return db.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM dispatchers WHERE id = ?`, id)
		return err
	})
}

// LeasedTo lists owner's jobs in flight leased before before.
func (db *DB) LeasedTo(ctx context.Context, owner string, before time.Time) (_ []store.LeasedJob, err error) {
	defer wrap(&err, "LeasedTo")
	rows, err := db.r.QueryContext(ctx, `SELECT id, lease_token, subscription_id, updated_at FROM delivery_jobs
		WHERE status = 'in_flight' AND leased_by = ? AND updated_at < ? ORDER BY id`, owner, micros(before))
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r scanner) (store.LeasedJob, error) {
		var j store.LeasedJob
		var at int64
		err := r.Scan(&j.JobID, &j.LeaseToken, &j.SubscriptionID, &at)
		j.UpdatedAt = fromMicros(at)
		return j, err
	})
}

// Reclaim: see store.Dispatch.
func (db *DB) Reclaim(ctx context.Context, token string) (_ []store.Claimed, err error) {
	defer wrap(&err, "Reclaim")
	var out []store.Claimed
	err = db.tx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+jobColumns+` FROM delivery_jobs
			WHERE status = 'in_flight' AND lease_token = ? ORDER BY event_sequence, id`, token)
		if err != nil {
			return err
		}
		jobs, err := collect(rows, scanJob)
		if err != nil {
			return err
		}
		out, err = loadClaimed(ctx, tx, jobs, token)
		return err
	})
	return out, err
}
