package sqlite

import (
	"context"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) CreateConsoleSession(ctx context.Context, s store.ConsoleSession) (err error) {
	defer wrap(&err, "CreateConsoleSession")
	now := micros(db.opts.Stamp())
	if _, err := db.w.ExecContext(ctx, `DELETE FROM console_sessions WHERE expires_at <= ?`, now); err != nil {
		return err
	}
	_, err = db.w.ExecContext(ctx,
		`INSERT INTO console_sessions (token_hash, tenant_id, key_id, csrf_secret, created_at, last_used_at, expires_at)
		 VALUES (?, ?, ?, ?, ?, ?, ?)`,
		s.TokenHash, s.TenantID, s.KeyID, s.CSRFSecret, micros(s.CreatedAt), micros(s.LastUsedAt), micros(s.ExpiresAt))
	return err
}

func (db *DB) TouchConsoleSession(ctx context.Context, hash string, idle time.Duration) (_ store.ConsoleSession, err error) {
	defer wrap(&err, "TouchConsoleSession")
	now := db.opts.Stamp()
	var s store.ConsoleSession
	var created, used, expires int64
	err = db.w.QueryRowContext(ctx,
		`UPDATE console_sessions SET last_used_at = ?, expires_at = ?
		 WHERE token_hash = ? AND expires_at > ?
		 RETURNING token_hash, tenant_id, key_id, csrf_secret, created_at, last_used_at, expires_at`,
		micros(now), micros(now.Add(idle)), hash, micros(now)).
		Scan(&s.TokenHash, &s.TenantID, &s.KeyID, &s.CSRFSecret, &created, &used, &expires)
	s.CreatedAt, s.LastUsedAt, s.ExpiresAt = fromMicros(created), fromMicros(used), fromMicros(expires)
	return s, notFound(err, func(string) error { return store.ConsoleSessionNotFound() }, "")
}

func (db *DB) DeleteConsoleSession(ctx context.Context, hash string) (err error) {
	defer wrap(&err, "DeleteConsoleSession")
	_, err = db.w.ExecContext(ctx, `DELETE FROM console_sessions WHERE token_hash = ?`, hash)
	return err
}

func (db *DB) CreatePortalLink(ctx context.Context, l store.PortalLink) (err error) {
	defer wrap(&err, "CreatePortalLink")
	if _, err := db.w.ExecContext(ctx, `DELETE FROM portal_links WHERE expires_at <= ?`, micros(db.opts.Stamp())); err != nil {
		return err
	}
	_, err = db.w.ExecContext(ctx,
		`INSERT INTO portal_links (token_hash, tenant_id, created_at, expires_at, revoked) VALUES (?, ?, ?, ?, ?)`,
		l.TokenHash, l.TenantID, micros(l.CreatedAt), micros(l.ExpiresAt), l.Revoked)
	return broken(err, store.TenantNotFound(l.TenantID), nil)
}

func (db *DB) GetPortalLink(ctx context.Context, hash string) (_ store.PortalLink, err error) {
	defer wrap(&err, "GetPortalLink")
	var l store.PortalLink
	var created, expires int64
	err = db.r.QueryRowContext(ctx,
		`SELECT token_hash, tenant_id, created_at, expires_at, revoked FROM portal_links WHERE token_hash = ?`, hash).
		Scan(&l.TokenHash, &l.TenantID, &created, &expires, &l.Revoked)
	l.CreatedAt, l.ExpiresAt = fromMicros(created), fromMicros(expires)
	return l, notFound(err, func(string) error { return store.PortalLinkNotFound() }, "")
}

func (db *DB) RevokePortalLink(ctx context.Context, hash string) (err error) {
	defer wrap(&err, "RevokePortalLink")
	res, err := db.w.ExecContext(ctx, `UPDATE portal_links SET revoked = 1 WHERE token_hash = ?`, hash)
	return affected(res, err, func(string) error { return store.PortalLinkNotFound() }, "")
}
