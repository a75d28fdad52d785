package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func isForeignKeyViolation(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

func (db *DB) CreateAPIKey(ctx context.Context, k hub.APIKey) error {
	_, err := db.w.ExecContext(ctx, `INSERT INTO api_keys (id, tenant_id, hash, created_at) VALUES (?, ?, ?, ?)`,
		k.ID, k.TenantID, k.Hash, micros(k.CreatedAt))
	if isForeignKeyViolation(err) {
		return hub.Errorf(hub.ENOTFOUND, "tenant %q not found", k.TenantID)
	}
	return err
}

func (db *DB) GetAPIKey(ctx context.Context, id string) (hub.APIKey, error) {
	var k hub.APIKey
	var created int64
	err := db.r.QueryRowContext(ctx, `SELECT id, tenant_id, hash, created_at FROM api_keys WHERE id = ?`, id).
		Scan(&k.ID, &k.TenantID, &k.Hash, &created)
	k.CreatedAt = fromMicros(created)
	return k, notFound(err, "api key not found")
}

func (db *DB) DeleteAPIKey(ctx context.Context, tenantID, id string) error {
	res, err := db.w.ExecContext(ctx, `DELETE FROM api_keys WHERE id = ? AND tenant_id = ?`, id, tenantID)
	return affected(res, err, "api key %q not found", id)
}

// affected turns "no row changed" into ENOTFOUND.
func affected(res sql.Result, err error, format string, args ...any) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return hub.Errorf(hub.ENOTFOUND, format, args...)
	}
	return nil
}

const subscriptionColumns = `id, tenant_id, name, event_types, destination_type, destination_url, destination_headers,
	auth_type, auth_header_name, secrets, retry_schedule, max_in_flight, enabled, verification_state,
	disabled_reason, disabled_at, failure_first_at, failure_last_at, version, created_at, updated_at`

func scanSubscription(row scanner) (hub.Subscription, error) {
	var s hub.Subscription
	var et, headers string
	var retry *string
	var disabledAt, first, last *int64
	var created, updated int64
	err := row.Scan(&s.ID, &s.TenantID, &s.Name, &et, &s.Destination.Type, &s.Destination.URL, &headers,
		&s.Destination.AuthType, &s.Destination.AuthHeaderName, &s.Secrets, &retry, &s.MaxInFlight, &s.Enabled,
		&s.VerificationState, &s.DisabledReason, &disabledAt, &first, &last, &s.Version, &created, &updated)
	if err != nil {
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
	return s, store.DecodeSubscription(&s, []byte(et), []byte(headers), retryBytes)
}

// subscriptionArgs are the values of every column after id and tenant_id
// that create and update write, in subscriptionColumns order.
func subscriptionArgs(s hub.Subscription) ([]any, error) {
	enc, err := store.EncodeSubscription(s)
	if err != nil {
		return nil, err
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
	return []any{s.Name, enc.EventTypes, s.Destination.Type, s.Destination.URL, enc.Headers,
		s.Destination.AuthType, s.Destination.AuthHeaderName, s.Secrets, retry, s.MaxInFlight, s.Enabled,
		s.VerificationState, s.DisabledReason, disabledAt, first, last}, nil
}

func (db *DB) CreateSubscription(ctx context.Context, s hub.Subscription) (hub.Subscription, error) {
	args, err := subscriptionArgs(s)
	if err != nil {
		return hub.Subscription{}, err
	}
	now := micros(db.opts.Stamp())
	args = append([]any{s.ID, s.TenantID}, args...)
	args = append(args, now, now)
	out, err := scanSubscription(db.w.QueryRowContext(ctx, `INSERT INTO subscriptions (`+subscriptionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)
		RETURNING `+subscriptionColumns, args...))
	switch {
	case isForeignKeyViolation(err):
		return hub.Subscription{}, hub.Errorf(hub.ENOTFOUND, "tenant %q not found", s.TenantID)
	case isUniqueViolation(err):
		return hub.Subscription{}, hub.Errorf(hub.ECONFLICT, "subscription %q already exists", s.ID)
	}
	return out, err
}

func (db *DB) GetSubscription(ctx context.Context, tenantID, id string) (hub.Subscription, error) {
	s, err := scanSubscription(db.r.QueryRowContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL`, id, tenantID))
	return s, notFound(err, "subscription %q not found", id)
}

func (db *DB) ListSubscriptions(ctx context.Context, p store.ListSubscriptionsParams) ([]hub.Subscription, error) {
	rows, err := db.r.QueryContext(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE tenant_id = ? AND id > ? AND deleted_at IS NULL ORDER BY id LIMIT ?`,
		p.TenantID, p.After, store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return collect(rows, scanSubscription)
}

func (db *DB) UpdateSubscription(ctx context.Context, s hub.Subscription) (hub.Subscription, error) {
	args, err := subscriptionArgs(s)
	if err != nil {
		return hub.Subscription{}, err
	}
	now := micros(db.opts.Stamp())
	args = append(args, now, s.ID, s.TenantID, s.Version)
	var out hub.Subscription
	err = db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = scanSubscription(tx.QueryRowContext(ctx, `UPDATE subscriptions SET
		name = ?, event_types = ?, destination_type = ?, destination_url = ?, destination_headers = ?,
		auth_type = ?, auth_header_name = ?, secrets = ?, retry_schedule = ?, max_in_flight = ?,
		enabled = ?, verification_state = ?, disabled_reason = ?, disabled_at = ?,
		failure_first_at = ?, failure_last_at = ?, version = version + 1, updated_at = ?
		WHERE id = ? AND tenant_id = ? AND version = ? AND deleted_at IS NULL
		RETURNING `+subscriptionColumns, args...))
		if err != nil || out.Enabled {
			return err
		}
		return deadLetterPending(ctx, tx, s.ID, hub.DeadLetterSubscriptionDisabled, now)
	})
	if errors.Is(err, sql.ErrNoRows) {
		if _, gerr := db.GetSubscription(ctx, s.TenantID, s.ID); gerr != nil {
			return hub.Subscription{}, gerr
		}
		return hub.Subscription{}, hub.Errorf(hub.ECONFLICT, "subscription %q was modified concurrently; retry", s.ID)
	}
	return out, err
}

func (db *DB) DeleteSubscription(ctx context.Context, tenantID, id string) error {
	now := micros(db.opts.Stamp())
	return db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE subscriptions SET deleted_at = ?, enabled = 0, version = version + 1, updated_at = ?
			WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL`, now, now, id, tenantID)
		if err := affected(res, err, "subscription %q not found", id); err != nil {
			return err
		}
		return deadLetterPending(ctx, tx, id, hub.DeadLetterSubscriptionDeleted, now)
	})
}
