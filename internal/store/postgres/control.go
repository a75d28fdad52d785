package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) CreateAPIKey(ctx context.Context, k hub.APIKey) (err error) {
	defer wrap(&err, "CreateAPIKey")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	_, err = db.pool.Exec(ctx, `INSERT INTO api_keys (id, tenant_id, hash, created_at) VALUES ($1, $2, $3, $4)`,
		k.ID, k.TenantID, k.Hash, k.CreatedAt)
	return broken(err, store.TenantNotFound(k.TenantID), nil)
}

func (db *DB) GetAPIKey(ctx context.Context, id string) (_ hub.APIKey, err error) {
	defer wrap(&err, "GetAPIKey")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	var k hub.APIKey
	err = db.pool.QueryRow(ctx, `SELECT id, tenant_id, hash, created_at FROM api_keys WHERE id = $1`, id).
		Scan(&k.ID, &k.TenantID, &k.Hash, &k.CreatedAt)
	k.CreatedAt = k.CreatedAt.UTC()
	return k, notFound(err, store.APIKeyNotFound, "")
}

func (db *DB) DeleteAPIKey(ctx context.Context, tenantID, id string) (err error) {
	defer wrap(&err, "DeleteAPIKey")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	tag, err := db.pool.Exec(ctx, `DELETE FROM api_keys WHERE id = $1 AND tenant_id = $2`, id, tenantID)
	if err == nil && tag.RowsAffected() == 0 {
		return store.APIKeyNotFound(id)
	}
	return err
}

const subscriptionColumns = `id, tenant_id, name, event_types, destination_type, destination_url, destination_headers,
	auth_type, auth_header_name, secrets, retry_schedule, max_in_flight, enabled, verification_state,
	disabled_reason, disabled_at, failure_first_at, failure_last_at, version, created_at, updated_at, filters,
	rate_limit_per_second, destination_config,
	transform`

func scanSubscription(row pgx.Row) (hub.Subscription, error) {
	var s hub.Subscription
	var et, headers, retry, filters []byte
	var dc string
	var first, last *time.Time
	err := row.Scan(&s.ID, &s.TenantID, &s.Name, &et, &s.Destination.Type, &s.Destination.URL, &headers,
		&s.Destination.AuthType, &s.Destination.AuthHeaderName, &s.Secrets, &retry, &s.MaxInFlight, &s.Enabled,
		&s.VerificationState, &s.DisabledReason, &s.DisabledAt, &first, &last, &s.Version, &s.CreatedAt, &s.UpdatedAt,
		&filters, &s.RateLimit, &dc,
		&s.Transform)
	if err != nil {
		return s, err
	}
	if err := store.DecodeDestinationConfig(&s, []byte(dc)); err != nil {
		return s, err
	}
	if first != nil && last != nil {
		s.FailureSpan = &hub.FailureSpan{First: first.UTC(), Last: last.UTC()}
	}
	if s.DisabledAt != nil {
		t := s.DisabledAt.UTC()
		s.DisabledAt = &t
	}
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	return s, store.DecodeSubscription(&s, et, headers, retry, filters)
}

func spanTimes(s hub.Subscription) (first, last *time.Time) {
	if s.FailureSpan != nil {
		return &s.FailureSpan.First, &s.FailureSpan.Last
	}
	return nil, nil
}

func (db *DB) CreateSubscription(ctx context.Context, s hub.Subscription) (_ hub.Subscription, err error) {
	defer wrap(&err, "CreateSubscription")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	enc, err := store.EncodeSubscription(s)
	if err != nil {
		return hub.Subscription{}, err
	}
	now := db.opts.Stamp()
	first, last := spanTimes(s)
	out, err := scanSubscription(db.pool.QueryRow(ctx, `INSERT INTO subscriptions (`+subscriptionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, 1, $19, $19, $20, $21, $22,
			$23)
		RETURNING `+subscriptionColumns,
		s.ID, s.TenantID, s.Name, enc.EventTypes, s.Destination.Type, s.Destination.URL, enc.Headers,
		s.Destination.AuthType, s.Destination.AuthHeaderName, s.Secrets, enc.RetrySchedule, s.MaxInFlight, s.Enabled,
		s.VerificationState, s.DisabledReason, s.DisabledAt, first, last, now, enc.Filters, s.RateLimit, enc.DestinationConfig,
		s.Transform))
	return out, broken(err, store.TenantNotFound(s.TenantID), store.SubscriptionExists(s.ID))
}

func (db *DB) GetSubscription(ctx context.Context, tenantID, id string) (_ hub.Subscription, err error) {
	defer wrap(&err, "GetSubscription")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	return db.getSubscription(ctx, tenantID, id)
}

func (db *DB) getSubscription(ctx context.Context, tenantID, id string) (hub.Subscription, error) {
	s, err := scanSubscription(db.pool.QueryRow(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL`, id, tenantID))
	return s, notFound(err, store.SubscriptionNotFound, id)
}

func (db *DB) ListSubscriptions(ctx context.Context, p store.ListSubscriptionsParams) (_ []hub.Subscription, err error) {
	defer wrap(&err, "ListSubscriptions")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	rows, err := db.pool.Query(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE tenant_id = $1 AND id > $2 AND deleted_at IS NULL ORDER BY id LIMIT $3`,
		p.TenantID, p.After, store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Subscription, error) { return scanSubscription(r) })
}

func (db *DB) ListDisabledSubscriptions(ctx context.Context, p store.ListDisabledSubscriptionsParams) (_ []hub.Subscription, err error) {
	defer wrap(&err, "ListDisabledSubscriptions")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	// After the previous page's last row in the order below: an earlier
	// time, the same time and a greater id, or no time (those sort last).
	after, args := "", []any{store.ClampLimit(p.Limit, 50, 1000)}
	switch {
	case p.After != nil && p.After.At != nil:
		after = ` AND (disabled_at < $2 OR (disabled_at = $2 AND id > $3) OR disabled_at IS NULL)`
		args = append(args, *p.After.At, p.After.ID)
	case p.After != nil:
		after = ` AND disabled_at IS NULL AND id > $2`
		args = append(args, p.After.ID)
	}
	rows, err := db.pool.Query(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions
		WHERE NOT enabled AND disabled_reason <> '' AND deleted_at IS NULL`+after+`
		ORDER BY disabled_at DESC NULLS LAST, id LIMIT $1`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Subscription, error) { return scanSubscription(r) })
}

func (db *DB) UpdateSubscription(ctx context.Context, s hub.Subscription) (_ hub.Subscription, err error) {
	defer wrap(&err, "UpdateSubscription")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	enc, err := store.EncodeSubscription(s)
	if err != nil {
		return hub.Subscription{}, err
	}
	first, last := spanTimes(s)
	now := db.opts.Stamp()
	var out hub.Subscription
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		// The update is fenced on the version: if it is written, the row
		// it replaced is the one read here.
		var wasEnabled bool
		if err := tx.QueryRow(ctx, `SELECT enabled FROM subscriptions WHERE id = $1 AND version = $2`, s.ID, s.Version).
			Scan(&wasEnabled); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var err error
		out, err = scanSubscription(tx.QueryRow(ctx, `UPDATE subscriptions SET
		name = $3, event_types = $4, destination_type = $5, destination_url = $6, destination_headers = $7,
		auth_type = $8, auth_header_name = $9, secrets = $10, retry_schedule = $11, max_in_flight = $12,
		enabled = $13, verification_state = $14, disabled_reason = $15, disabled_at = $16,
		failure_first_at = $17, failure_last_at = $18, version = version + 1, updated_at = $19, filters = $21,
		rate_limit_per_second = $22, destination_config = $23,
		transform = $24
		WHERE id = $1 AND tenant_id = $2 AND version = $20 AND deleted_at IS NULL
		RETURNING `+subscriptionColumns,
			s.ID, s.TenantID, s.Name, enc.EventTypes, s.Destination.Type, s.Destination.URL, enc.Headers,
			s.Destination.AuthType, s.Destination.AuthHeaderName, s.Secrets, enc.RetrySchedule, s.MaxInFlight,
			s.Enabled, s.VerificationState, s.DisabledReason, s.DisabledAt, first, last, now, s.Version, enc.Filters,
			s.RateLimit, enc.DestinationConfig,
			s.Transform))
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
			// A disabled subscription delivers nothing: its waiting jobs are
			// dead-lettered (replayable once it is enabled again).
			if rep.DeadLettered, err = deadLetterPending(ctx, tx, []string{s.ID}, hub.DeadLetterSubscriptionDisabled, now); err != nil {
				return err
			}
		}
		return db.report(ctx, tx, rep, now)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		_, lookup := db.getSubscription(ctx, s.TenantID, s.ID)
		return hub.Subscription{}, store.UpdateMissed(s.ID, lookup)
	}
	return out, err
}

func (db *DB) DeleteSubscription(ctx context.Context, tenantID, id string) (err error) {
	defer wrap(&err, "DeleteSubscription")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	now := db.opts.Stamp()
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE subscriptions SET deleted_at = $3, enabled = false, version = version + 1, updated_at = $3
			WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL`, id, tenantID, now)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.SubscriptionNotFound(id)
		}
		dead, err := deadLetterPending(ctx, tx, []string{id}, hub.DeadLetterSubscriptionDeleted, now)
		if err != nil {
			return err
		}
		return db.report(ctx, tx, store.Report{DeadLettered: dead}, now)
	})
}
