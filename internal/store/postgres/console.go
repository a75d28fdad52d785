package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

const sessionColumns = `token_hash, kind, tenant_id, key_id, auth_hash, link_id, csrf_hash, created_at, last_used_at, expires_at, ends_at, subject, sealed_auth`

func (db *DB) CreateConsoleSession(ctx context.Context, s store.ConsoleSession) (err error) {
	defer wrap(&err, "CreateConsoleSession")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return db.insertSession(ctx, tx, s) })
}

// insertSession drops the expired sessions and stores s.
func (db *DB) insertSession(ctx context.Context, tx pgx.Tx, s store.ConsoleSession) error {
	s = s.Capped()
	if _, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE expires_at <= $1`, db.opts.Stamp()); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO console_sessions (`+sessionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
		s.TokenHash, string(s.Kind), s.TenantID, s.KeyID, s.AuthHash, s.LinkID, s.CSRFHash,
		s.CreatedAt, s.LastUsedAt, s.ExpiresAt, s.EndsAt, s.Subject, sealedAuth(s.SealedAuth))
	return err
}

func (db *DB) TouchConsoleSession(ctx context.Context, hash string, idle time.Duration) (_ store.ConsoleSession, err error) {
	defer wrap(&err, "TouchConsoleSession")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	now := db.opts.Stamp()
	var s store.ConsoleSession
	var kind string
	err = db.pool.QueryRow(ctx,
		`UPDATE console_sessions SET last_used_at = $1, expires_at = least($2, ends_at)
		 WHERE token_hash = $3 AND expires_at > $1 AND ends_at > $1
		 RETURNING `+sessionColumns,
		now, now.Add(idle), hash).
		Scan(&s.TokenHash, &kind, &s.TenantID, &s.KeyID, &s.AuthHash, &s.LinkID, &s.CSRFHash,
			&s.CreatedAt, &s.LastUsedAt, &s.ExpiresAt, &s.EndsAt, &s.Subject, &s.SealedAuth)
	s.Kind = store.SessionKind(kind)
	s.CreatedAt, s.LastUsedAt, s.ExpiresAt, s.EndsAt = s.CreatedAt.UTC(), s.LastUsedAt.UTC(), s.ExpiresAt.UTC(), s.EndsAt.UTC()
	return s, notFound(err, func(string) error { return store.ConsoleSessionNotFound() }, "")
}

func (db *DB) DeleteConsoleSession(ctx context.Context, hash string) (err error) {
	defer wrap(&err, "DeleteConsoleSession")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	_, err = db.pool.Exec(ctx, `DELETE FROM console_sessions WHERE token_hash = $1`, hash)
	return err
}

const linkColumns = `id, token_hash, tenant_id, created_at, expires_at, used_at, revoked`

func scanLink(row pgx.Row) (store.PortalLink, error) {
	var l store.PortalLink
	err := row.Scan(&l.ID, &l.TokenHash, &l.TenantID, &l.CreatedAt, &l.ExpiresAt, &l.UsedAt, &l.Revoked)
	l.CreatedAt, l.ExpiresAt, l.UsedAt = l.CreatedAt.UTC(), l.ExpiresAt.UTC(), utcPtr(l.UsedAt)
	return l, notFound(err, func(string) error { return store.PortalLinkNotFound() }, "")
}

func (db *DB) CreatePortalLink(ctx context.Context, l store.PortalLink) (err error) {
	defer wrap(&err, "CreatePortalLink")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	if _, err := db.pool.Exec(ctx, `DELETE FROM portal_links WHERE expires_at <= $1`, db.opts.Stamp()); err != nil {
		return err
	}
	_, err = db.pool.Exec(ctx, `INSERT INTO portal_links (`+linkColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		l.ID, l.TokenHash, l.TenantID, l.CreatedAt, l.ExpiresAt, l.UsedAt, l.Revoked)
	return broken(err, store.TenantNotFound(l.TenantID), nil)
}

func (db *DB) GetPortalLink(ctx context.Context, hash string) (_ store.PortalLink, err error) {
	defer wrap(&err, "GetPortalLink")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	return scanLink(db.pool.QueryRow(ctx, `SELECT `+linkColumns+` FROM portal_links WHERE token_hash = $1`, hash))
}

func (db *DB) OpenPortalLink(ctx context.Context, hash string, s store.ConsoleSession) (_ store.PortalLink, err error) {
	defer wrap(&err, "OpenPortalLink")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	now := db.opts.Stamp()
	var l store.PortalLink
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		// The row lock orders this against a revocation: either the
		// revocation sees the session stored here, or this sees the link
		// revoked.
		var err error
		l, err = scanLink(tx.QueryRow(ctx, `SELECT `+linkColumns+` FROM portal_links WHERE token_hash = $1 FOR UPDATE`, hash))
		if err != nil {
			return err
		}
		if l.UsedAt != nil {
			return store.PortalLinkUsed()
		}
		if !l.Live(now) {
			return store.PortalLinkNotFound()
		}
		if _, err := tx.Exec(ctx, `UPDATE portal_links SET used_at = $1 WHERE id = $2`, now, l.ID); err != nil {
			return err
		}
		l.UsedAt = &now
		return db.insertSession(ctx, tx, store.PortalSession(s, l))
	})
	return l, err
}

func (db *DB) ListPortalLinks(ctx context.Context, p store.ListPortalLinksParams) (_ []store.PortalLink, err error) {
	defer wrap(&err, "ListPortalLinks")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	rows, err := db.pool.Query(ctx, `SELECT `+linkColumns+` FROM portal_links
		WHERE tenant_id = $1 AND id > $2 AND NOT revoked AND expires_at > $3 ORDER BY id LIMIT $4`,
		p.TenantID, p.After, db.opts.Stamp(), store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.PortalLink, error) { return scanLink(r) })
}

func (db *DB) RevokePortalLink(ctx context.Context, tenantID, id string) (err error) {
	defer wrap(&err, "RevokePortalLink")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE portal_links SET revoked = true
			WHERE id = $1 AND tenant_id = $2 AND NOT revoked AND expires_at > $3`, id, tenantID, db.opts.Stamp())
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.PortalLinkNotFound()
		}
		_, err = tx.Exec(ctx, `DELETE FROM console_sessions WHERE link_id = $1`, id)
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
