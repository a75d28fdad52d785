package api

import (
	"crypto/subtle"
	"net/http"
	"strings"

	hub "github.com/lerianstudio/streaming-hub"
)

// principal is who a request acts as: the admin, or one tenant.
type principal struct {
	Admin    bool
	TenantID string // set for tenant keys, and for the admin naming a tenant
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// authenticate resolves the bearer token. The admin token is compared in
// constant time.
func (s *Server) authenticate(r *http.Request) (principal, error) {
	token, ok := bearer(r)
	if !ok {
		return principal{}, hub.Errorf(hub.EUNAUTHORIZED, "missing bearer token")
	}
	if s.deps.AdminToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.deps.AdminToken)) == 1 {
		return principal{Admin: true}, nil
	}
	return principal{}, hub.Errorf(hub.EUNAUTHORIZED, "invalid bearer token")
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
