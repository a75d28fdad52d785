package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

const tenantColumns = `id, name, status, created_at`

func scanTenant(row pgx.Row) (hub.Tenant, error) {
	var t hub.Tenant
	err := row.Scan(&t.ID, &t.Name, &t.Status, &t.CreatedAt)
	t.CreatedAt = t.CreatedAt.UTC()
	return t, err
}

func (db *DB) CreateTenant(ctx context.Context, p store.CreateTenantParams) (hub.Tenant, error) {
	if err := p.Validate(); err != nil {
		return hub.Tenant{}, err
	}
	if p.Status == "" {
		p.Status = hub.TenantActive
	}
	now := db.opts.Stamp()
	t, err := scanTenant(db.pool.QueryRow(ctx,
		`INSERT INTO tenants (id, name, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
		 RETURNING `+tenantColumns, p.ID, p.Name, p.Status, now))
	if isUniqueViolation(err) {
		return hub.Tenant{}, hub.Errorf(hub.ECONFLICT, "tenant %q already exists", p.ID)
	}
	return t, err
}

func (db *DB) GetTenant(ctx context.Context, id string) (hub.Tenant, error) {
	t, err := scanTenant(db.pool.QueryRow(ctx, `SELECT `+tenantColumns+` FROM tenants WHERE id = $1`, id))
	return t, notFound(err, "tenant %q not found", id)
}

func (db *DB) ListTenants(ctx context.Context, p store.ListTenantsParams) ([]hub.Tenant, error) {
	rows, err := db.pool.Query(ctx,
		`SELECT `+tenantColumns+` FROM tenants WHERE id > $1 ORDER BY id LIMIT $2`,
		p.After, store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Tenant, error) { return scanTenant(r) })
}

func (db *DB) UpdateTenant(ctx context.Context, p store.UpdateTenantParams) (hub.Tenant, error) {
	if err := p.Validate(); err != nil {
		return hub.Tenant{}, err
	}
	t, err := scanTenant(db.pool.QueryRow(ctx,
		`UPDATE tenants SET name = coalesce($2, name), status = coalesce($3, status), updated_at = $4
		 WHERE id = $1 RETURNING `+tenantColumns, p.ID, p.Name, p.Status, db.opts.Stamp()))
	return t, notFound(err, "tenant %q not found", p.ID)
}
