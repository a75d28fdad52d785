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

func (db *DB) CreateTenant(ctx context.Context, p store.CreateTenantParams) (hub.Tenant, error) {
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
	if isUniqueViolation(err) {
		return hub.Tenant{}, hub.Errorf(hub.ECONFLICT, "tenant %q already exists", p.ID)
	}
	return t, err
}

func (db *DB) GetTenant(ctx context.Context, id string) (hub.Tenant, error) {
	t, err := scanTenant(db.r.QueryRowContext(ctx, `SELECT `+tenantColumns+` FROM tenants WHERE id = ?`, id))
	return t, notFound(err, "tenant %q not found", id)
}

func (db *DB) ListTenants(ctx context.Context, p store.ListTenantsParams) ([]hub.Tenant, error) {
	rows, err := db.r.QueryContext(ctx,
		`SELECT `+tenantColumns+` FROM tenants WHERE id > ? ORDER BY id LIMIT ?`,
		p.After, store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return collect(rows, scanTenant)
}

func (db *DB) UpdateTenant(ctx context.Context, p store.UpdateTenantParams) (hub.Tenant, error) {
	if err := p.Validate(); err != nil {
		return hub.Tenant{}, err
	}
	t, err := scanTenant(db.w.QueryRowContext(ctx,
		`UPDATE tenants SET name = coalesce(?, name), status = coalesce(?, status), updated_at = ?
		 WHERE id = ? RETURNING `+tenantColumns, nullable(p.Name), nullable(p.Status), micros(db.opts.Stamp()), p.ID))
	return t, notFound(err, "tenant %q not found", p.ID)
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
