package sqlite

import (
	"context"
	"database/sql"
	"errors"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) CreateAPIKey(ctx context.Context, k hub.APIKey) (err error) {
	defer wrap(&err, "CreateAPIKey")
	_, err = db.w.ExecContext(ctx, `INSERT INTO api_keys (id, tenant_id, hash, created_at) VALUES (?, ?, ?, ?)`,
		k.ID, k.TenantID, k.Hash, micros(k.CreatedAt))
	return broken(err, store.TenantNotFound(k.TenantID), nil)
}

func (db *DB) GetAPIKey(ctx context.Context, id string) (_ hub.APIKey, err error) {
	defer wrap(&err, "GetAPIKey")
	var k hub.APIKey
	var created int64
	err = db.r.QueryRowContext(ctx, `SELECT id, tenant_id, hash, created_at FROM api_keys WHERE id = ?`, id).
		Scan(&k.ID, &k.TenantID, &k.Hash, &created)
	k.CreatedAt = fromMicros(created)
	return k, notFound(err, store.APIKeyNotFound, "")
}

func (db *DB) DeleteAPIKey(ctx context.Context, tenantID, id string) (err error) {
	defer wrap(&err, "DeleteAPIKey")
	res, err := db.w.ExecContext(ctx, `DELETE FROM api_keys WHERE id = ? AND tenant_id = ?`, id, tenantID)
	return affected(res, err, store.APIKeyNotFound, id)
}

// affected turns "no row changed" into the not-found error of what id
// names.
func affected(res sql.Result, err error, nf func(id string) error, id string) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return nf(id)
	}
	return nil
}

const subscriptionColumns = `id, tenant_id, name, event_types, destination_type, destination_url, destination_headers,
	auth_type, auth_header_name, secrets, retry_schedule, max_in_flight, enabled, verification_state,
	disabled_reason, disabled_at, failure_first_at, failure_last_at, version, created_at, updated_at, filters,
	rate_limit_per_second, destination_config,
	transform`

func scanSubscription(row scanner) (hub.Subscription, error) {
	var s hub.Subscription
	var et, headers string
	var retry, filters *string
	var disabledAt, first, last *int64
	var created, updated int64
	var dc string
	err := row.Scan(&s.ID, &s.TenantID, &s.Name, &et, &s.Destination.Type, &s.Destination.URL, &headers,
		&s.Destination.AuthType, &s.Destination.AuthHeaderName, &s.Secrets, &retry, &s.MaxInFlight, &s.Enabled,
		&s.VerificationState, &s.DisabledReason, &disabledAt, &first, &last, &s.Version, &created, &updated, &filters,
		&s.RateLimit, &dc,
		&s.Transform)
	if err != nil {
		return s, err
	}
	if err := store.DecodeDestinationConfig(&s, []byte(dc)); err != nil {
		return s, err
	}
	s.CreatedAt, s.UpdatedAt = fromMicros(created), fromMicros(updated)
	if disabledAt != nil {
		t := fromMicros(*disabledAt)
		s.DisabledAt = &t
	}
	if first != nil && last != nil {
		s.FailureSpan = &hub.FailureSpan{First: fromMicros(*first), Last: fromMicros(*last)}
	}
	var retryBytes []byte
	if retry != nil {
		retryBytes = []byte(*retry)
	}
	var filterBytes []byte
	if filters != nil {
		filterBytes = []byte(*filters)
	}
	return s, store.DecodeSubscription(&s, []byte(et), []byte(headers), retryBytes, filterBytes)
}

// subscriptionArgs are the values of every column after id and tenant_id
// that create and update write, in subscriptionColumns order, up to
// failure_last_at; filters (last of the columns) comes apart.
func subscriptionArgs(s hub.Subscription) (_ []any, filters any, _ error) {
	enc, err := store.EncodeSubscription(s)
	if err != nil {
		return nil, nil, err
	}
	var disabledAt, first, last any
	if s.DisabledAt != nil {
		disabledAt = micros(*s.DisabledAt)
	}
	if s.FailureSpan != nil {
		first, last = micros(s.FailureSpan.First), micros(s.FailureSpan.Last)
	}
	var retry any
	if enc.RetrySchedule != nil {
		retry = *enc.RetrySchedule
	}
	if enc.Filters != nil {
		filters = *enc.Filters
	}
	return []any{s.Name, enc.EventTypes, s.Destination.Type, s.Destination.URL, enc.Headers,
		s.Destination.AuthType, s.Destination.AuthHeaderName, s.Secrets, retry, s.MaxInFlight, s.Enabled,
		s.VerificationState, s.DisabledReason, disabledAt, first, last}, filters, nil
}

// reachArgs are the values of rate_limit_per_second, destination_config
// and transform.
func reachArgs(s hub.Subscription) ([]any, error) {
	enc, err := store.EncodeSubscription(s)
	if err != nil {
		return nil, err
	}
	return []any{s.RateLimit, enc.DestinationConfig,
		s.Transform}, nil
}

func (db *DB) CreateSubscription(ctx context.Context, s hub.Subscription) (_ hub.Subscription, err error) {
	defer wrap(&err, "CreateSubscription")
	args, filters, err := subscriptionArgs(s)
	if err != nil {
		return hub.Subscription{}, err
	}
	now := micros(db.opts.Stamp())
	args = append([]any{s.ID, s.TenantID}, args...)
	args = append(args, now, now, filters)
	reach, err := reachArgs(s)
	if err != nil {
		return hub.Subscription{}, err
	}
	args = append(args, reach...)
	out, err := scanSubscription(db.w.QueryRowContext(ctx, `INSERT INTO subscriptions (`+subscriptionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?,
			?)
		RETURNING `+subscriptionColumns, args...))
	return out, broken(err, store.TenantNotFound(s.TenantID), store.SubscriptionExists(s.ID))
}

func (db *DB) GetSubscription(ctx context.Context, tenantID, id string) (_ hub.Subscription, err error) {
	defer wrap(&err, "GetSubscription")
	return db.getSubscription(ctx, tenantID, id)
}

func (db *DB) getSubscription(ctx context.Context, tenantID, id string) (hub.Subscription, error) {
	s, err := scanSubscription(db.r.QueryRowContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL`, id, tenantID))
	return s, notFound(err, store.SubscriptionNotFound, id)
}

func (db *DB) ListSubscriptions(ctx context.Context, p store.ListSubscriptionsParams) (_ []hub.Subscription, err error) {
	defer wrap(&err, "ListSubscriptions")
	rows, err := db.r.QueryContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE tenant_id = ? AND id > ? AND deleted_at IS NULL ORDER BY id LIMIT ?`,
		p.TenantID, p.After, store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return collect(rows, scanSubscription)
}

func (db *DB) ListDisabledSubscriptions(ctx context.Context, p store.ListDisabledSubscriptionsParams) (_ []hub.Subscription, err error) {
	defer wrap(&err, "ListDisabledSubscriptions")
	// After the previous page's last row in the order below: an earlier
	// time, the same time and a greater id, or no time (those sort last).
	after, args := "", []any{}
	switch {
	case p.After != nil && p.After.At != nil:
		at := micros(*p.After.At)
		after = ` AND (disabled_at < ? OR (disabled_at = ? AND id > ?) OR disabled_at IS NULL)`
		args = append(args, at, at, p.After.ID)
	case p.After != nil:
		after = ` AND disabled_at IS NULL AND id > ?`
		args = append(args, p.After.ID)
	}
	args = append(args, store.ClampLimit(p.Limit, 50, 1000))
	rows, err := db.r.QueryContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE enabled = 0 AND disabled_reason <> '' AND deleted_at IS NULL`+after+`
		ORDER BY disabled_at IS NULL, disabled_at DESC, id LIMIT ?`, args...)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanSubscription)
}

func (db *DB) UpdateSubscription(ctx context.Context, s hub.Subscription) (_ hub.Subscription, err error) {
	defer wrap(&err, "UpdateSubscription")
	args, filters, err := subscriptionArgs(s)
	if err != nil {
		return hub.Subscription{}, err
	}
	now := micros(db.opts.Stamp())
	reach, err := reachArgs(s)
	if err != nil {
		return hub.Subscription{}, err
	}
	args = append(args, filters, now)
	args = append(args, reach...)
	args = append(args, s.ID, s.TenantID, s.Version)
	var out hub.Subscription
	err = db.tx(ctx, func(tx *sql.Tx) error {
		// The update is fenced on the version: if it is written, the row
		// it replaced is the one read here.
		var wasEnabled bool
		if err := tx.QueryRowContext(ctx, `SELECT enabled FROM subscriptions WHERE id = ? AND version = ?`, s.ID, s.Version).
			Scan(&wasEnabled); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		var err error
		out, err = scanSubscription(tx.QueryRowContext(ctx, `UPDATE subscriptions SET
		name = ?, event_types = ?, destination_type = ?, destination_url = ?, destination_headers = ?,
		auth_type = ?, auth_header_name = ?, secrets = ?, retry_schedule = ?, max_in_flight = ?,
		enabled = ?, verification_state = ?, disabled_reason = ?, disabled_at = ?,
		failure_first_at = ?, failure_last_at = ?, filters = ?, version = version + 1, updated_at = ?,
		rate_limit_per_second = ?, destination_config = ?,
		transform = ?
		WHERE id = ? AND tenant_id = ? AND version = ? AND deleted_at IS NULL
		RETURNING `+subscriptionColumns, args...))
		if err != nil {
			return err
		}
		var rep store.Report
		switch disabled, recovered := store.Transitions(wasEnabled, out); {
		case disabled:
			rep.Disabled = []string{s.ID}
		case recovered:
			rep.Recovered = []string{s.ID}
		}
		if !out.Enabled {
			if rep.DeadLettered, err = deadLetterPendingIDs(ctx, tx, s.ID, hub.DeadLetterSubscriptionDisabled, now); err != nil {
				return err
			}
		}
		return db.report(ctx, tx, rep, now)
	})
	if errors.Is(err, sql.ErrNoRows) {
		_, lookup := db.getSubscription(ctx, s.TenantID, s.ID)
		return hub.Subscription{}, store.UpdateMissed(s.ID, lookup)
	}
	return out, err
}

func (db *DB) DeleteSubscription(ctx context.Context, tenantID, id string) (err error) {
	defer wrap(&err, "DeleteSubscription")
	now := micros(db.opts.Stamp())
	return db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE subscriptions SET deleted_at = ?, enabled = 0, version = version + 1, updated_at = ?
			WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL`, now, now, id, tenantID)
		if err := affected(res, err, store.SubscriptionNotFound, id); err != nil {
			return err
		}
		dead, err := deadLetterPendingIDs(ctx, tx, id, hub.DeadLetterSubscriptionDeleted, now)
		if err != nil {
			return err
		}
		return db.report(ctx, tx, store.Report{DeadLettered: dead}, now)
	})
}
