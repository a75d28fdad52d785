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

func (db *DB) CreateTenant(ctx context.Context, p store.CreateTenantParams) (_ hub.Tenant, err error) {
	defer wrap(&err, "CreateTenant")
	defer db.budgets.use(ctx, store.BudgetAPI)()
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
	return t, broken(err, nil, store.TenantExists(p.ID))
}

func (db *DB) GetTenant(ctx context.Context, id string) (_ hub.Tenant, err error) {
	defer wrap(&err, "GetTenant")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	t, err := scanTenant(db.pool.QueryRow(ctx, `SELECT `+tenantColumns+` FROM tenants WHERE id = $1`, id))
	return t, notFound(err, store.TenantNotFound, id)
}

func (db *DB) ListTenants(ctx context.Context, p store.ListTenantsParams) (_ []hub.Tenant, err error) {
	defer wrap(&err, "ListTenants")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	rows, err := db.pool.Query(ctx,
		`SELECT `+tenantColumns+` FROM tenants WHERE id > $1 ORDER BY id LIMIT $2`,
		p.After, store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Tenant, error) { return scanTenant(r) })
}

func (db *DB) UpdateTenant(ctx context.Context, p store.UpdateTenantParams) (_ hub.Tenant, err error) {
	defer wrap(&err, "UpdateTenant")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	if err := p.Validate(); err != nil {
		return hub.Tenant{}, err
	}
	t, err := scanTenant(db.pool.QueryRow(ctx,
		`UPDATE tenants SET name = coalesce($2, name), status = coalesce($3, status), updated_at = $4
		 WHERE id = $1 RETURNING `+tenantColumns, p.ID, p.Name, p.Status, db.opts.Stamp()))
	return t, notFound(err, store.TenantNotFound, p.ID)
}
