package store

import (
	hub "github.com/lerianstudio/streaming-hub"
)

// Validate checks what every driver requires of a new tenant.
func (p CreateTenantParams) Validate() error {
	if err := hub.ValidateTenantID(p.ID); err != nil {
		return hub.Errorf(hub.EINVALID, "id: %v", err)
	}
	if p.Status != "" && p.Status != hub.TenantActive && p.Status != hub.TenantInactive {
		return hub.Errorf(hub.EINVALID, "status: must be active or inactive")
	}
	return nil
}

// Validate checks an update.
func (p UpdateTenantParams) Validate() error {
	if p.Status != nil && *p.Status != hub.TenantActive && *p.Status != hub.TenantInactive {
		return hub.Errorf(hub.EINVALID, "status: must be active or inactive")
	}
	return nil
}

// ClampLimit bounds a page size: def when n <= 0, at most max.
func ClampLimit(n, def, max int) int {
	if n <= 0 {
		return def
	}
	return min(n, max)
}
