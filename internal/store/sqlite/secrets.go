package sqlite

import (
	"context"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) ListSealed(ctx context.Context, after string, limit int) (_ []store.Sealed, err error) {
	defer wrap(&err, "ListSealed")
	rows, err := db.r.QueryContext(ctx, `SELECT id, tenant_id, secrets FROM subscriptions WHERE id > ? ORDER BY id LIMIT ?`,
		after, store.ClampLimit(limit, 100, 1000))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Sealed
	for rows.Next() {
		var s store.Sealed
		if err := rows.Scan(&s.SubscriptionID, &s.TenantID, &s.Blob); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func (db *DB) Reseal(ctx context.Context, subscriptionID string, old, blob []byte) (_ bool, err error) {
	defer wrap(&err, "Reseal")
	res, err := db.w.ExecContext(ctx, `UPDATE subscriptions SET secrets = ? WHERE id = ? AND secrets = ?`, blob, subscriptionID, old)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
