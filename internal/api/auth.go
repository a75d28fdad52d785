package api

import (
	"crypto/subtle"
	"net/http"
	"strings"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/apikey"
)

// principal is who a request acts as: the admin, or one tenant's key.
type principal struct {
	Admin    bool
	TenantID string // the key's tenant; empty for the admin
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// authenticate resolves the bearer token: the admin token (compared in
// constant time) or a tenant key (found by its id, its secret compared as a
// hash in constant time). Keys are looked up on every request: deleting one
// takes effect at once.
func (s *Server) authenticate(r *http.Request) (principal, error) {
	token, ok := bearer(r)
	if !ok {
		return principal{}, hub.Errorf(hub.EUNAUTHORIZED, "missing bearer token")
	}
	if s.deps.AdminToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.deps.AdminToken)) == 1 {
		return principal{Admin: true}, nil
	}
	id, secret, ok := apikey.Parse(token)
	if !ok {
		return principal{}, hub.Errorf(hub.EUNAUTHORIZED, "invalid bearer token")
	}
	key, err := s.deps.Store.GetAPIKey(r.Context(), id)
	if hub.ErrorCode(err) == hub.ENOTFOUND || err == nil && !key.Matches(secret) {
		return principal{}, hub.Errorf(hub.EUNAUTHORIZED, "invalid bearer token")
	}
	if err != nil {
		return principal{}, err
	}
	return principal{TenantID: key.TenantID}, nil
}

// requireAdmin answers 401 for no or bad credentials, 403 for a tenant key.
func (s *Server) requireAdmin(r *http.Request) error {
	p, err := s.authenticate(r)
	if err != nil {
		return err
	}
	if !p.Admin {
		return hub.Errorf(hub.EFORBIDDEN, "this endpoint needs the admin token")
	}
	return nil
}

// tenantScope returns the tenant a tenant-scoped request acts on: the key's
// own tenant, or the one the admin names in X-Tenant-Id. An inactive
// tenant's keys are refused; the admin may still manage it.
func (s *Server) tenantScope(r *http.Request) (string, error) {
	p, err := s.authenticate(r)
	if err != nil {
		return "", err
	}
	id := p.TenantID
	if p.Admin {
		if id = r.Header.Get("X-Tenant-Id"); id == "" {
			return "", hub.Errorf(hub.EINVALID, "X-Tenant-Id: required with the admin token on tenant endpoints")
		}
	}
	t, err := s.deps.Store.GetTenant(r.Context(), id)
	if err != nil {
		return "", err
	}
	if !p.Admin && t.Status != hub.TenantActive {
		return "", hub.Errorf(hub.EFORBIDDEN, "tenant %q is inactive", id)
	}
	return id, nil
}
