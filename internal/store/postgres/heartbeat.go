package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Heartbeat renews (or registers) a process's heartbeat in one statement,
// at the database's clock (store.Options.DatabaseClock). A row that
// recovery deleted (its jobs taken over) is not brought back unless
// register is set: the process learns it lost its jobs.
func (db *DB) Heartbeat(ctx context.Context, id string, register bool) (_ bool, err error) {
	defer wrap(&err, "Heartbeat")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	now := db.opts.LeaseNow()
	var tag interface{ RowsAffected() int64 }
	if register {
		tag, err = db.pool.Exec(ctx, `INSERT INTO dispatchers (id, heartbeat_at, started_at)
			VALUES ($1, coalesce($2::timestamptz, now()), coalesce($2::timestamptz, now()))
			ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at`, id, now)
	} else {
		tag, err = db.pool.Exec(ctx, `UPDATE dispatchers SET heartbeat_at = coalesce($2::timestamptz, now()) WHERE id = $1`, id, now)
	}
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// Deregister deletes a stopping process's heartbeat.
func (db *DB) Deregister(ctx context.Context, id string) (err error) {
	defer wrap(&err, "Deregister")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	_, err = db.pool.Exec(ctx, `DELETE FROM dispatchers WHERE id = $1`, id)
	return err
}

// LeasedTo lists owner's jobs in flight leased before before, through the
// in-flight index (a process holds a bounded number).
func (db *DB) LeasedTo(ctx context.Context, owner string, before time.Time) (_ []store.LeasedJob, err error) {
	defer wrap(&err, "LeasedTo")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	rows, err := db.pool.Query(ctx, `SELECT id, lease_token, subscription_id, updated_at FROM delivery_jobs
		WHERE status = 'in_flight' AND leased_by = $1 AND updated_at < $2 ORDER BY id`, owner, before)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.LeasedJob, error) {
		var j store.LeasedJob
		err := r.Scan(&j.JobID, &j.LeaseToken, &j.SubscriptionID, &j.UpdatedAt)
		j.UpdatedAt = j.UpdatedAt.UTC()
		return j, err
	})
}

// lapsedDispatchers locks, without waiting, the heartbeats older than a
// lease: a process renewing its own meanwhile waits for this transaction,
// then finds its row gone. $1 is the database's clock or the caller's.
const lapsedDispatchers = `SELECT id FROM dispatchers
	WHERE heartbeat_at < coalesce($1::timestamptz, now()) - $2::interval AND id <> $3 ORDER BY id FOR UPDATE SKIP LOCKED`

// expiredJobs are the in-flight jobs to recover: every job of a lapsed
// process, and, up to the limit, the jobs of no process with a heartbeat
// whose own lease ended.
const expiredJobs = `SELECT id FROM delivery_jobs j WHERE j.status = 'in_flight' AND j.leased_by = ANY($1)
UNION ALL
(SELECT id FROM delivery_jobs j WHERE j.status = 'in_flight' AND j.lease_expires_at < coalesce($2::timestamptz, now())
	AND (j.leased_by IS NULL OR NOT EXISTS (SELECT 1 FROM dispatchers d WHERE d.id = j.leased_by))
	ORDER BY j.lease_expires_at LIMIT $3)`

// Reclaim: see store.Dispatch.
func (db *DB) Reclaim(ctx context.Context, token string) (_ []store.Claimed, err error) {
	defer wrap(&err, "Reclaim")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	rows, err := db.pool.Query(ctx, `SELECT `+prefixed("c.", jobColumns)+`, `+prefixed("e.", eventSelect)+`, `+
		prefixed("s.", subscriptionColumns)+`, s.healed_at
		FROM delivery_jobs c
		JOIN events e ON e.tenant_id = c.tenant_id AND e.sequence = c.event_sequence
		JOIN subscriptions s ON s.id = c.subscription_id
		WHERE c.status = 'in_flight' AND c.lease_token = $1
		ORDER BY c.event_sequence, c.id`, token)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Claimed, error) { return scanClaimed(r, token) })
}
