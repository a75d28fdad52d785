package api

import (
	"net/http"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Portal links (docs/console.md, docs/security.md): a URL that opens a
// one-tenant console session, once, until it expires or is revoked.
const (
	defaultPortalTTL = time.Hour
	maxPortalTTL     = 24 * time.Hour
	// PortalPath is where a portal link's token is opened.
	PortalPath = "/console/portal/"
)

// portalLinkJSON is a link as listed: never its token.
type portalLinkJSON struct {
	ID        string     `json:"id"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	UsedAt    *time.Time `json:"used_at"`
}

func (s *Server) createPortalLink(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdminOf(r, r.PathValue("id")); err != nil {
		return err
	}
	var req struct {
		TTL *string `json:"ttl"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	ttl := defaultPortalTTL
	if req.TTL != nil {
		d, err := time.ParseDuration(*req.TTL)
		if err != nil || d <= 0 || d > maxPortalTTL {
			return hub.Errorf(hub.EINVALID, "ttl: a Go duration above 0s and at most 24h")
		}
		ttl = d
	}
	tenantID := r.PathValue("id")
	if _, err := s.deps.Store.GetTenant(r.Context(), tenantID); err != nil {
		return err
	}
	token, now := store.NewToken(), s.now()
	link := store.PortalLink{ID: hub.NewID(store.PortalLinkIDPrefix, now), TokenHash: store.HashToken(token), TenantID: tenantID,
		CreatedAt: now, ExpiresAt: now.Add(ttl)}
	if err := s.deps.Store.CreatePortalLink(r.Context(), link); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, struct {
		ID        string    `json:"id"`
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	}{link.ID, PortalPath + token, link.ExpiresAt})
	return nil
}

// listPortalLinks lists a tenant's links that may still open or hold a
// session: neither revoked nor expired.
func (s *Server) listPortalLinks(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdminOf(r, r.PathValue("id")); err != nil {
		return err
	}
	limit, after, err := pageParams(r)
	if err != nil {
		return err
	}
	tenantID := r.PathValue("id")
	if _, err := s.deps.Store.GetTenant(r.Context(), tenantID); err != nil {
		return err
	}
	links, err := s.deps.Store.ListPortalLinks(r.Context(), store.ListPortalLinksParams{TenantID: tenantID, After: after, Limit: limit + 1})
	if err != nil {
		return err
	}
	out := make([]portalLinkJSON, len(links))
	for i, l := range links {
		out[i] = portalLinkJSON{ID: l.ID, CreatedAt: l.CreatedAt, ExpiresAt: l.ExpiresAt, UsedAt: l.UsedAt}
	}
	writeJSON(w, http.StatusOK, paginate(out, limit, func(l portalLinkJSON) string { return l.ID }))
	return nil
}

// revokePortalLink revokes a link and ends the session it opened: 404 for
// an unknown link, another tenant's, or one revoked or expired already.
func (s *Server) revokePortalLink(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdminOf(r, r.PathValue("id")); err != nil {
		return err
	}
	if err := s.deps.Store.RevokePortalLink(r.Context(), r.PathValue("id"), r.PathValue("link_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// AdminTokenHash is store.HashToken of the admin token this server
// accepts, "" when it has none: a console session opened with the admin
// token lasts only while this is still its hash (docs/security.md).
func (s *Server) AdminTokenHash() string {
	if s.deps.AdminToken == "" {
		return ""
	}
	return store.HashToken(s.deps.AdminToken)
}

// LoggedPath is a request path as logs and spans show it: a portal link's
// token (everything after /console/portal/) is replaced by "…", so the
// log never holds a link that could be opened.
func LoggedPath(p string) string {
	if strings.HasPrefix(p, PortalPath) && len(p) > len(PortalPath) {
		return PortalPath + "…"
	}
	return p
}
