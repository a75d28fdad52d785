package store

import (
	"context"

	hub "github.com/lerianstudio/streaming-hub"
)

// EnsureTenant creates the tenant id, active and named id, unless it
// exists, and returns it as stored: what a single-tenant hub does at start
// (docs/operations.md, "Single-tenant mode"). Replicas starting together
// may all call it: a create that finds the tenant made by another is fine.
// An existing tenant is left as it is, inactive or renamed.
func EnsureTenant(ctx context.Context, s Store, id string) (hub.Tenant, error) {
	t, err := s.CreateTenant(ctx, CreateTenantParams{ID: id, Name: id})
	if err == nil {
		return t, nil
	}
	if hub.ErrorCode(err) != hub.ECONFLICT {
		return hub.Tenant{}, err
	}
	return s.GetTenant(ctx, id)
}
