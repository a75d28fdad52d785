package config

import (
	"strconv"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Tenancy says which tenants the hub serves (docs/operations.md,
// "Single-tenant mode").
type Tenancy struct {
	// MultiTenant (MULTI_TENANT_ENABLED, read without the prefix as
	// lib-commons reads it, or with it) is false once the hub serves one
	// tenant alone: MULTI_TENANT_ENABLED=false or TENANT_ID set.
	MultiTenant bool
	// TenantID (TENANT_ID) is the tenant served when MultiTenant is false:
	// DefaultTenantID unless set. Empty while multi-tenant.
	TenantID string
}

// Served is the one tenant the hub serves, "" when it serves every tenant
// of its roster.
func (t Tenancy) Served() string {
	if t.MultiTenant {
		return ""
	}
	return t.TenantID
}

// Reconciler configures the topic-drift check (docs/operations.md, "Topic
// drift").
type Reconciler struct {
	Enabled  bool          // RECONCILER_ENABLED
	Interval time.Duration // RECONCILER_INTERVAL, in seconds
}

// tenancy reads MULTI_TENANT_ENABLED and TENANT_ID.
func (r *reader) tenancy(t *Tenancy) {
	multi, multiSet := t.MultiTenant, false
	if s, ok := r.authRaw("MULTI_TENANT_ENABLED"); ok {
		r.parseBool("MULTI_TENANT_ENABLED", s, &multi)
		multiSet = true
	}
	var id string
	r.str("TENANT_ID", &id)
	if id != "" {
		if err := hub.ValidateTenantID(id); err != nil {
			r.fail("TENANT_ID", "%s (a ce-tenantid: 1..256 bytes of [A-Za-z0-9._:-])", err)
			return
		}
	}
	switch {
	case id != "" && multiSet && multi:
		r.fail("TENANT_ID", "is set while MULTI_TENANT_ENABLED=true: a hub serving one tenant needs MULTI_TENANT_ENABLED=false or unset")
	case id != "":
		t.MultiTenant, t.TenantID = false, id
	case multiSet && !multi:
		t.MultiTenant, t.TenantID = false, DefaultTenantID
	}
}

// reconciler reads RECONCILER_ENABLED and RECONCILER_INTERVAL.
func (r *reader) reconciler(c *Reconciler) {
	r.boolean("RECONCILER_ENABLED", &c.Enabled)
	r.seconds("RECONCILER_INTERVAL", &c.Interval)
}

// seconds reads a whole number of seconds (Lerian's chart writes them so);
// a Go duration such as 5m is accepted too.
func (r *reader) seconds(name string, v *time.Duration) {
	r.note(name, strconv.Itoa(int(*v/time.Second)))
	s, ok := r.raw(name)
	if !ok {
		return
	}
	if n, err := strconv.Atoi(s); err == nil && n > 0 {
		*v = time.Duration(n) * time.Second
		return
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 && !strings.HasPrefix(s, "-") {
		*v = d
		return
	}
	r.fail(name, "must be a positive number of seconds such as 300 (or a Go duration such as 5m), got %q", s)
}
