package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) ListSealed(ctx context.Context, after string, limit int) (_ []store.Sealed, err error) {
	defer wrap(&err, "ListSealed")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	rows, err := db.pool.Query(ctx, `SELECT id, tenant_id, secrets FROM subscriptions WHERE id > $1 ORDER BY id LIMIT $2`,
		after, store.ClampLimit(limit, 100, 1000))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (s store.Sealed, err error) {
		err = r.Scan(&s.SubscriptionID, &s.TenantID, &s.Blob)
		return s, err
	})
}

func (db *DB) Reseal(ctx context.Context, subscriptionID string, old, blob []byte) (_ bool, err error) {
	defer wrap(&err, "Reseal")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	ct, err := db.pool.Exec(ctx, `UPDATE subscriptions SET secrets = $3 WHERE id = $1 AND secrets = $2`, subscriptionID, old, blob)
	return ct.RowsAffected() == 1, err
}
