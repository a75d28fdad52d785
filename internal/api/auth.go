package api

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/apikey"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Principal is who a request acts as: the admin, or one tenant's key.
type Principal struct {
	Admin    bool
	TenantID string // the key's tenant; empty for the admin
	// KeyID is the key that authenticated; empty for the admin and for a
	// console session opened by a portal link.
	KeyID string
	// A JWT that Lerian's access manager authorized
	// (docs/lerian-platform.md): its subject, its store.HashToken and its
	// exp. Empty for the hub's own credentials.
	Subject   string
	TokenHash string
	Expires   time.Time
	// LinkID is the portal link that opened a console session; empty
	// otherwise.
	LinkID string

	// jwt is the token of a console session opened with a JWT, clientIP
	// the address its browser's request came from, memo the decisions of
	// that request (SessionPrincipal): with them every in-process request
	// of the session is asked of the access manager again.
	jwt, clientIP string
	memo          *decisionMemo
}

// Who names p where a write is marked with who asked (a replay's
// replayed_by): the access manager's subject for a JWT, "admin" for the
// admin token, the API key's id for a tenant key, "portal:<link id>" for a
// console session a portal link opened ("tenant:<id>" if a principal ever
// names nothing more than its tenant).
func (p Principal) Who() string {
	switch {
	case p.Subject != "":
		return p.Subject
	case p.Admin:
		return "admin"
	case p.KeyID != "":
		return p.KeyID
	case p.LinkID != "":
		return "portal:" + p.LinkID
	case p.TenantID != "":
		return "tenant:" + p.TenantID
	}
	return ""
}

type principal = Principal

type principalKey struct{}

// inProcess is a principal already authenticated; decided: the access
// manager already authorized this very request (a JWT's, or none needed).
type inProcess struct {
	p       Principal
	decided bool
}

// WithPrincipal marks a request made inside the process (the console's)
// as already authenticated: the API's handlers then apply their rules
// (admin only, tenant scope, inactive tenants) to p, and a p opened with a
// JWT (SessionPrincipal) is authorized for the route by the access manager
// as that JWT would be over HTTP. No client can set a context value, so
// nothing from outside reaches this path.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, inProcess{p: p})
}

// withDecided marks a request whose authentication and authorization are
// done: its handler finds p without asking again.
func withDecided(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, inProcess{p: p, decided: true})
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
	p, err := s.authenticateAny(r)
	if err != nil {
		return p, err
	}
	if !p.Admin {
		// A key, a JWT or a portal link of another tenant than a
		// single-tenant hub's: refused whatever it asks.
		if err := s.serves(p.TenantID); err != nil {
			return principal{}, err
		}
	}
	return p, nil
}

// serves refuses a tenant other than the one a single-tenant hub serves
// (docs/security.md#one-tenant-everywhere): tenant_not_served, 403.
func (s *Server) serves(tenantID string) error {
	if served := s.deps.ServedTenant; served != "" && tenantID != served {
		return hub.Errorf(hub.ETENANTNOTSERVED, "this hub serves tenant %q only (single-tenant mode), not %s", served, store.QuoteID(tenantID))
	}
	return nil
}

// authenticateAny is authenticate for any tenant.
func (s *Server) authenticateAny(r *http.Request) (principal, error) {
	if v, ok := r.Context().Value(principalKey{}).(inProcess); ok {
		if !v.decided && v.p.TokenHash != "" {
			// A console session opened with a JWT: this route, asked
			// again, as the API asks it for that JWT.
			a, ok := routeAccess[r.Pattern]
			if !ok {
				return principal{}, hub.Errorf(hub.EFORBIDDEN, "this endpoint is not open to access-manager tokens")
			}
			if err := s.reauthorize(r.Context(), v.p, a); err != nil {
				return principal{}, err
			}
		}
		return v.p, nil
	}
	token, ok := bearer(r)
	if !ok {
		s.countAuthFailure("missing")
		return principal{}, hub.Errorf(hub.EUNAUTHORIZED, "missing bearer token")
	}
	return s.authenticateToken(r, token, false)
}

// SignIn authenticates a token typed into the console's sign-in form by the
// API's own rules: the same comparisons, the same throttle of failures per
// client address and key id, the same counter. A tenant key of an inactive
// tenant is refused as the API refuses it.
func (s *Server) SignIn(r *http.Request, token string) (Principal, error) {
	token = strings.TrimSpace(token)
	if token == "" || !hub.PlainText(token) {
		s.countAuthFailure("missing")
		return Principal{}, hub.Errorf(hub.EUNAUTHORIZED, "missing token")
	}
	p, err := s.authenticateToken(r, token, true)
	if err == nil && !p.Admin {
		err = s.serves(p.TenantID)
	}
	if err != nil || p.Admin || p.TokenHash != "" {
		return p, err
	}
	t, err := s.deps.Store.GetTenant(r.Context(), p.TenantID)
	if err != nil {
		return Principal{}, err
	}
	if t.Status != hub.TenantActive {
		return Principal{}, hub.Errorf(hub.EFORBIDDEN, "tenant %q is inactive", t.ID)
	}
	return p, nil
}

// authenticateToken checks token under the throttle (docs/security.md): a client
// address over its limit of failures is refused whatever it sends; a key id
// over its limit slows wrong secrets only, so that failures others cause
// against a key id never lock its holder out. A wrong secret counts against
// the address and the key id, refused or not: a 429 for a throttled key id
// says no more than a 401, and costs the address as much.
func (s *Server) authenticateToken(r *http.Request, token string, signIn bool) (principal, error) {
	addr := s.clientKey(r)
	if wait, blocked := s.throttle.blocked(addr); blocked {
		s.countAuthFailure("throttled")
		return principal{}, throttled(wait)
	}
	if s.deps.AdminToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.deps.AdminToken)) == 1 {
		return principal{Admin: true}, nil
	}
	id, secret, isKey := apikey.Parse(token)
	if !isKey && s.access != nil {
		// Neither the admin token nor a key: a JWT for the access manager.
		return s.authenticateJWT(r, token, signIn)
	}
	if !isKey {
		s.throttle.fail(addr)
		s.countAuthFailure("invalid")
		return principal{}, hub.Errorf(hub.EUNAUTHORIZED, "invalid bearer token")
	}
	key, err := s.deps.Store.GetAPIKey(r.Context(), id)
	if err == nil && key.Matches(secret) {
		s.touchKey(r, key.ID)
		return principal{TenantID: key.TenantID, KeyID: key.ID}, nil
	}
	if err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
		return principal{}, err
	}
	// A wrong secret, or a key id that does not exist.
	keyID := "key:" + id
	wait, blocked := s.throttle.blocked(keyID)
	s.throttle.fail(addr, keyID)
	if blocked {
		s.countAuthFailure("throttled")
		return principal{}, throttled(wait)
	}
	s.countAuthFailure("invalid")
	return principal{}, hub.Errorf(hub.EUNAUTHORIZED, "invalid bearer token")
}

func (s *Server) countAuthFailure(reason string) {
	if m := s.deps.Metrics; m != nil {
		m.AuthFailures.WithLabelValues(reason).Inc()
	}
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

// requireAdminOf is requireAdmin for a route on the tenant tenantID: a
// single-tenant hub refuses any other (tenant_not_served).
func (s *Server) requireAdminOf(r *http.Request, tenantID string) error {
	if err := s.requireAdmin(r); err != nil {
		return err
	}
	return s.serves(tenantID)
}

// tenantScope returns the tenant a tenant-scoped request acts on: the key's
// own tenant, or the one the admin names in X-Tenant-Id (a single-tenant
// hub's served tenant when the admin names none). An inactive
// tenant's keys are refused; the admin may still manage it.
func (s *Server) tenantScope(r *http.Request) (string, error) {
	id, _, err := s.tenantScopeOf(r)
	return id, err
}

// tenantScopeOf is tenantScope that also says who asked.
func (s *Server) tenantScopeOf(r *http.Request) (string, Principal, error) {
	p, err := s.authenticate(r)
	if err != nil {
		return "", p, err
	}
	id := p.TenantID
	if p.Admin {
		if id = r.Header.Get("X-Tenant-Id"); id == "" {
			id = s.deps.ServedTenant
		}
		if id == "" {
			return "", p, hub.Errorf(hub.EINVALID, "X-Tenant-Id: required with the admin token on tenant endpoints")
		}
		if hub.ValidateTenantID(id) != nil {
			return "", p, hub.Errorf(hub.EINVALID, "X-Tenant-Id: must be 1..256 bytes of [A-Za-z0-9._:-]")
		}
		if err := s.serves(id); err != nil {
			return "", p, err
		}
	}
	t, err := s.deps.Store.GetTenant(r.Context(), id)
	if err != nil {
		return "", p, err
	}
	if !p.Admin && t.Status != hub.TenantActive {
		return "", p, hub.Errorf(hub.EFORBIDDEN, "tenant %q is inactive", id)
	}
	return id, p, nil
}

// ServedTenant is the one tenant a single-tenant hub serves, "" when it
// serves every tenant: the console's tenant when its operator chose none.
func (s *Server) ServedTenant() string { return s.deps.ServedTenant }
