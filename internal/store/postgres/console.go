package postgres

import (
	"context"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) CreateConsoleSession(ctx context.Context, s store.ConsoleSession) (err error) {
	defer wrap(&err, "CreateConsoleSession")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	if _, err := db.pool.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= $1`, db.opts.Stamp()); err != nil {
		return err
	}
	_, err = db.pool.Exec(ctx,
		`INSERT INTO console_sessions (token_hash, tenant_id, key_id, csrf_secret, created_at, last_used_at, expires_at)
		 VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		s.TokenHash, s.TenantID, s.KeyID, s.CSRFSecret, s.CreatedAt, s.LastUsedAt, s.ExpiresAt)
	return err
}

func (db *DB) TouchConsoleSession(ctx context.Context, hash string, idle time.Duration) (_ store.ConsoleSession, err error) {
	defer wrap(&err, "TouchConsoleSession")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	now := db.opts.Stamp()
	var s store.ConsoleSession
	err = db.pool.QueryRow(ctx,
		`UPDATE console_sessions SET last_used_at = $1, expires_at = $2
		 WHERE token_hash = $3 AND expires_at > $1
		 RETURNING token_hash, tenant_id, key_id, csrf_secret, created_at, last_used_at, expires_at`,
		now, now.Add(idle), hash).
		Scan(&s.TokenHash, &s.TenantID, &s.KeyID, &s.CSRFSecret, &s.CreatedAt, &s.LastUsedAt, &s.ExpiresAt)
	s.CreatedAt, s.LastUsedAt, s.ExpiresAt = s.CreatedAt.UTC(), s.LastUsedAt.UTC(), s.ExpiresAt.UTC()
	return s, notFound(err, func(string) error { return store.ConsoleSessionNotFound() }, "")
}

func (db *DB) DeleteConsoleSession(ctx context.Context, hash string) (err error) {
	defer wrap(&err, "DeleteConsoleSession")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	_, err = db.pool.Exec(ctx, `DELETE FROM console_sessions WHERE token_hash = $1`, hash)
	return err
}

func (db *DB) CreatePortalLink(ctx context.Context, l store.PortalLink) (err error) {
	defer wrap(&err, "CreatePortalLink")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	if _, err := db.pool.Exec(ctx, `DELETE FROM portal_links WHERE expires_at <= $1`, db.opts.Stamp()); err != nil {
		return err
	}
	_, err = db.pool.Exec(ctx,
		`INSERT INTO portal_links (token_hash, tenant_id, created_at, expires_at, revoked) VALUES ($1, $2, $3, $4, $5)`,
		l.TokenHash, l.TenantID, l.CreatedAt, l.ExpiresAt, l.Revoked)
	return broken(err, store.TenantNotFound(l.TenantID), nil)
}

func (db *DB) GetPortalLink(ctx context.Context, hash string) (_ store.PortalLink, err error) {
	defer wrap(&err, "GetPortalLink")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	var l store.PortalLink
	err = db.pool.QueryRow(ctx,
		`SELECT token_hash, tenant_id, created_at, expires_at, revoked FROM portal_links WHERE token_hash = $1`, hash).
		Scan(&l.TokenHash, &l.TenantID, &l.CreatedAt, &l.ExpiresAt, &l.Revoked)
	l.CreatedAt, l.ExpiresAt = l.CreatedAt.UTC(), l.ExpiresAt.UTC()
	return l, notFound(err, func(string) error { return store.PortalLinkNotFound() }, "")
}

func (db *DB) RevokePortalLink(ctx context.Context, hash string) (err error) {
	defer wrap(&err, "RevokePortalLink")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	tag, err := db.pool.Exec(ctx, `UPDATE portal_links SET revoked = true WHERE token_hash = $1`, hash)
	if err == nil && tag.RowsAffected() == 0 {
		return store.PortalLinkNotFound()
	}
	return err
}
