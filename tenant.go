package hub

import (
	"fmt"
	"time"
)

// TenantStatus is active or inactive. Inactive tenants' events are discarded
// at ingest.
type TenantStatus string

const (
	TenantActive   TenantStatus = "active"
	TenantInactive TenantStatus = "inactive"
)

// Tenant is one entry of the roster.
type Tenant struct {
	ID        string
	Name      string
	Status    TenantStatus
	CreatedAt time.Time
}

// MaxTenantIDLen bounds tenant ids (and ce-tenantid).
const MaxTenantIDLen = 256

// ValidateTenantID checks the ce-tenantid rule: 1..256 bytes of [A-Za-z0-9._:-].
func ValidateTenantID(id string) error {
	if id == "" {
		return fmt.Errorf("empty")
	}
	if len(id) > MaxTenantIDLen {
		return fmt.Errorf("longer than %d bytes", MaxTenantIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return fmt.Errorf("contains %q; allowed are [A-Za-z0-9._:-]", c)
		}
	}
	return nil
}
