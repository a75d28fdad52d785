package sqlite

import (
	"context"
	"database/sql"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

const tenantColumns = `id, name, status, created_at`

type scanner interface{ Scan(dest ...any) error }

func scanTenant(row scanner) (hub.Tenant, error) {
	var t hub.Tenant
	var created int64
	err := row.Scan(&t.ID, &t.Name, &t.Status, &created)
	t.CreatedAt = fromMicros(created)
	return t, err
}

func (db *DB) CreateTenant(ctx context.Context, p store.CreateTenantParams) (_ hub.Tenant, err error) {
	defer wrap(&err, "CreateTenant")
	if err := p.Validate(); err != nil {
		return hub.Tenant{}, err
	}
	if p.Status == "" {
		p.Status = hub.TenantActive
	}
	now := micros(db.opts.Stamp())
	t, err := scanTenant(db.w.QueryRowContext(ctx,
		`INSERT INTO tenants (id, name, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
		 RETURNING `+tenantColumns, p.ID, p.Name, p.Status, now, now))
	return t, broken(err, nil, store.TenantExists(p.ID))
}

func (db *DB) GetTenant(ctx context.Context, id string) (_ hub.Tenant, err error) {
	defer wrap(&err, "GetTenant")
	t, err := scanTenant(db.r.QueryRowContext(ctx, `SELECT `+tenantColumns+` FROM tenants WHERE id = ?`, id))
	return t, notFound(err, store.TenantNotFound, id)
}

func (db *DB) ListTenants(ctx context.Context, p store.ListTenantsParams) (_ []hub.Tenant, err error) {
	defer wrap(&err, "ListTenants")
	rows, err := db.r.QueryContext(ctx,
		`SELECT `+tenantColumns+` FROM tenants WHERE id > ? ORDER BY id LIMIT ?`,
		p.After, store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return collect(rows, scanTenant)
}

func (db *DB) UpdateTenant(ctx context.Context, p store.UpdateTenantParams) (_ hub.Tenant, err error) {
	defer wrap(&err, "UpdateTenant")
	if err := p.Validate(); err != nil {
		return hub.Tenant{}, err
	}
	t, err := scanTenant(db.w.QueryRowContext(ctx,
		`UPDATE tenants SET name = coalesce(?, name), status = coalesce(?, status), updated_at = ?
		 WHERE id = ? RETURNING `+tenantColumns, nullable(p.Name), nullable(p.Status), micros(db.opts.Stamp()), p.ID))
	return t, notFound(err, store.TenantNotFound, p.ID)
}

// collect scans every row with fn.
func collect[T any](rows *sql.Rows, fn func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := fn(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// nullable turns a nil pointer into SQL NULL and a set one into its value.
func nullable[T ~string](p *T) any {
	if p == nil {
		return nil
	}
	return string(*p)
}
