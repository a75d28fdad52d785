package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) ListClientCertificateSubscriptions(ctx context.Context) (_ []hub.Subscription, err error) {
	defer wrap(&err, "ListClientCertificateSubscriptions")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	// destination_config is JSON text whose client_certificate is left
	// out when empty (omitempty): the key's presence is the filter.
	rows, err := db.pool.Query(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE enabled AND deleted_at IS NULL AND destination_config LIKE '%"client_certificate":%' ORDER BY id`)
	if err != nil {
		return nil, err
	}
	subs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Subscription, error) { return scanSubscription(r) })
	if err != nil {
		return nil, err
	}
	out := []hub.Subscription{}
	for _, s := range subs {
		if s.Destination.ClientCertificate != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

func (db *DB) EmitOperational(ctx context.Context, events []hub.Event) (_ int, err error) {
	defer wrap(&err, "EmitOperational")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	if len(events) == 0 {
		return 0, nil
	}
	now := db.opts.Stamp()
	var emitted int
	var subs []string
	err = pgx.BeginTxFunc(ctx, db.pool, ingestTx, func(tx pgx.Tx) error {
		w := &pgx.Batch{}
		m, err := db.admitAndMatch(ctx, tx, events, now, w, nil, nil, true)
		if err != nil {
			return err
		}
		emitted, subs = store.CountAccepted(m.outcomes), m.subs
		return tx.SendBatch(ctx, w).Close()
	})
	if err != nil {
		return 0, err
	}
	db.wakes.Notify(subs)
	return emitted, nil
}
