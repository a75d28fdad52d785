package sqlite

import (
	"context"
	"database/sql"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

const sessionColumns = `token_hash, kind, tenant_id, key_id, auth_hash, link_id, csrf_hash, created_at, last_used_at, expires_at, ends_at, subject, sealed_auth`

func (db *DB) CreateConsoleSession(ctx context.Context, s store.ConsoleSession) (err error) {
	defer wrap(&err, "CreateConsoleSession")
	return db.tx(ctx, func(tx *sql.Tx) error { return db.insertSession(ctx, tx, s) })
}

// insertSession drops the expired sessions and stores s.
func (db *DB) insertSession(ctx context.Context, tx *sql.Tx, s store.ConsoleSession) error {
	s = s.Capped()
	if _, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE expires_at <= ?`, micros(db.opts.Stamp())); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO console_sessions (`+sessionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.TokenHash, string(s.Kind), s.TenantID, s.KeyID, s.AuthHash, s.LinkID, s.CSRFHash,
		micros(s.CreatedAt), micros(s.LastUsedAt), micros(s.ExpiresAt), micros(s.EndsAt), s.Subject, sealedAuth(s.SealedAuth))
	return err
}

func (db *DB) TouchConsoleSession(ctx context.Context, hash string, idle time.Duration) (_ store.ConsoleSession, err error) {
	defer wrap(&err, "TouchConsoleSession")
	now := db.opts.Stamp()
	var s store.ConsoleSession
	var kind string
	var created, used, expires, ends int64
	err = db.w.QueryRowContext(ctx,
		`UPDATE console_sessions SET last_used_at = ?1, expires_at = min(?2, ends_at)
		 WHERE token_hash = ?3 AND expires_at > ?1 AND ends_at > ?1
		 RETURNING `+sessionColumns,
		micros(now), micros(now.Add(idle)), hash).
		Scan(&s.TokenHash, &kind, &s.TenantID, &s.KeyID, &s.AuthHash, &s.LinkID, &s.CSRFHash, &created, &used, &expires, &ends, &s.Subject, &s.SealedAuth)
	s.Kind = store.SessionKind(kind)
	s.CreatedAt, s.LastUsedAt, s.ExpiresAt, s.EndsAt = fromMicros(created), fromMicros(used), fromMicros(expires), fromMicros(ends)
	return s, notFound(err, func(string) error { return store.ConsoleSessionNotFound() }, "")
}

func (db *DB) DeleteConsoleSession(ctx context.Context, hash string) (err error) {
	defer wrap(&err, "DeleteConsoleSession")
	_, err = db.w.ExecContext(ctx, `DELETE FROM console_sessions WHERE token_hash = ?`, hash)
	return err
}

const linkColumns = `id, token_hash, tenant_id, created_at, expires_at, used_at, revoked`

func scanLink(row scanner) (store.PortalLink, error) {
	var l store.PortalLink
	var created, expires int64
	var used *int64
	err := row.Scan(&l.ID, &l.TokenHash, &l.TenantID, &created, &expires, &used, &l.Revoked)
	l.CreatedAt, l.ExpiresAt, l.UsedAt = fromMicros(created), fromMicros(expires), optTime(used)
	return l, notFound(err, func(string) error { return store.PortalLinkNotFound() }, "")
}

func (db *DB) CreatePortalLink(ctx context.Context, l store.PortalLink) (err error) {
	defer wrap(&err, "CreatePortalLink")
	if _, err := db.w.ExecContext(ctx, `DELETE FROM portal_links WHERE expires_at <= ?`, micros(db.opts.Stamp())); err != nil {
		return err
	}
	_, err = db.w.ExecContext(ctx, `INSERT INTO portal_links (`+linkColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		l.ID, l.TokenHash, l.TenantID, micros(l.CreatedAt), micros(l.ExpiresAt), optMicros(l.UsedAt), l.Revoked)
	return broken(err, store.TenantNotFound(l.TenantID), nil)
}

func (db *DB) GetPortalLink(ctx context.Context, hash string) (_ store.PortalLink, err error) {
	defer wrap(&err, "GetPortalLink")
	return scanLink(db.r.QueryRowContext(ctx, `SELECT `+linkColumns+` FROM portal_links WHERE token_hash = ?`, hash))
}

func (db *DB) OpenPortalLink(ctx context.Context, hash string, s store.ConsoleSession) (_ store.PortalLink, err error) {
	defer wrap(&err, "OpenPortalLink")
	now := db.opts.Stamp()
	var l store.PortalLink
	// One writer, BEGIN IMMEDIATE: nothing revokes or opens the link
	// between the read and the writes.
	err = db.tx(ctx, func(tx *sql.Tx) error {
		var err error
		l, err = scanLink(tx.QueryRowContext(ctx, `SELECT `+linkColumns+` FROM portal_links WHERE token_hash = ?`, hash))
		if err != nil {
			return err
		}
		if l.UsedAt != nil {
			return store.PortalLinkUsed()
		}
		if !l.Live(now) {
			return store.PortalLinkNotFound()
		}
		if _, err := tx.ExecContext(ctx, `UPDATE portal_links SET used_at = ? WHERE id = ?`, micros(now), l.ID); err != nil {
			return err
		}
		l.UsedAt = &now
		return db.insertSession(ctx, tx, store.PortalSession(s, l))
	})
	return l, err
}

func (db *DB) ListPortalLinks(ctx context.Context, p store.ListPortalLinksParams) (_ []store.PortalLink, err error) {
	defer wrap(&err, "ListPortalLinks")
	rows, err := db.r.QueryContext(ctx, `SELECT `+linkColumns+` FROM portal_links
		WHERE tenant_id = ? AND id > ? AND NOT revoked AND expires_at > ? ORDER BY id LIMIT ?`,
		p.TenantID, p.After, micros(db.opts.Stamp()), store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return collect(rows, scanLink)
}

func (db *DB) RevokePortalLink(ctx context.Context, tenantID, id string) (err error) {
	defer wrap(&err, "RevokePortalLink")
	return db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE portal_links SET revoked = 1
			WHERE id = ? AND tenant_id = ? AND NOT revoked AND expires_at > ?`, id, tenantID, micros(db.opts.Stamp()))
		if err := affected(res, err, func(string) error { return store.PortalLinkNotFound() }, ""); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE link_id = ?`, id)
		return err
	})
}

// sealedAuth is a session's sealed token as stored: never NULL.
func sealedAuth(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
