package api

import (
	"net/http"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Portal links (SPEC 23): a URL that opens a one-tenant console session.
const (
	defaultPortalTTL = time.Hour
	maxPortalTTL     = 24 * time.Hour
	// PortalPath is where a portal link's token is opened.
	PortalPath = "/console/portal/"
)

func (s *Server) createPortalLink(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdmin(r); err != nil {
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
	link := store.PortalLink{TokenHash: store.HashToken(token), TenantID: tenantID, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	if err := s.deps.Store.CreatePortalLink(r.Context(), link); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, struct {
		URL       string    `json:"url"`
		ExpiresAt time.Time `json:"expires_at"`
	}{PortalPath + token, link.ExpiresAt})
	return nil
}
