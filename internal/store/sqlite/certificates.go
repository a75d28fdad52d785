package sqlite

import (
	"context"
	"database/sql"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) ListClientCertificateSubscriptions(ctx context.Context) (_ []hub.Subscription, err error) {
	defer wrap(&err, "ListClientCertificateSubscriptions")
	// destination_config is JSON text whose client_certificate is left
	// out when empty (omitempty): the key's presence is the filter.
	rows, err := db.r.QueryContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE enabled = 1 AND deleted_at IS NULL AND destination_config LIKE '%"client_certificate":%' ORDER BY id`)
	if err != nil {
		return nil, err
	}
	subs, err := collect(rows, scanSubscription)
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
	if len(events) == 0 {
		return 0, nil
	}
	now := micros(db.opts.Stamp())
	var emitted int
	var subs []string
	err = db.tx(ctx, func(tx *sql.Tx) error {
		outcomes, err := db.admit(ctx, tx, events, now)
		if err != nil {
			return err
		}
		emitted = store.CountAccepted(outcomes)
		if _, subs, err = match(ctx, tx, events, store.AcceptedTenants(events, outcomes), outcomes, fromMicros(now)); err != nil {
			return err
		}
		return noteTypes(ctx, tx, events, outcomes, now)
	})
	if err != nil {
		return 0, err
	}
	db.wakes.Notify(subs)
	return emitted, nil
}
