package api

import (
	"net/http"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/apikey"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

type tenantJSON struct {
	ID        string           `json:"id"`
	Name      string           `json:"name"`
	Status    hub.TenantStatus `json:"status"`
	CreatedAt time.Time        `json:"created_at"`
}

func toTenantJSON(t hub.Tenant) tenantJSON { return tenantJSON(t) }

func (s *Server) createTenant(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdmin(r); err != nil {
		return err
	}
	var req struct {
		ID     string           `json:"id"`
		Name   string           `json:"name"`
		Status hub.TenantStatus `json:"status"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := s.serves(req.ID); err != nil {
		return err
	}
	if req.Name == "" {
		req.Name = req.ID
	} else if err := hub.ValidateName(req.Name); err != nil {
		return err
	}
	t, err := s.deps.Store.CreateTenant(r.Context(), store.CreateTenantParams{ID: req.ID, Name: req.Name, Status: req.Status})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toTenantJSON(t))
	return nil
}

func (s *Server) listTenants(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdmin(r); err != nil {
		return err
	}
	limit, after, err := pageParams(r)
	if err != nil {
		return err
	}
	var ts []hub.Tenant
	if served := s.deps.ServedTenant; served != "" {
		// A single-tenant hub lists the one tenant it serves, whatever
		// else the roster holds.
		t, err := s.deps.Store.GetTenant(r.Context(), served)
		if err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
			return err
		}
		if err == nil && served > after {
			ts = append(ts, t)
		}
	} else if ts, err = s.deps.Store.ListTenants(r.Context(), store.ListTenantsParams{After: after, Limit: limit + 1}); err != nil {
		return err
	}
	out := make([]tenantJSON, len(ts))
	for i, t := range ts {
		out[i] = toTenantJSON(t)
	}
	writeJSON(w, http.StatusOK, paginate(out, limit, func(t tenantJSON) string { return t.ID }))
	return nil
}

// getTenant: the admin reads any tenant; a tenant's key (or session) reads
// its own, as a Svix application key reads its own application, so that a
// tenant's tools can show its name. Any other id is to a tenant key what an
// unknown id is (404, the same message), and is never looked up; an
// inactive tenant's key is refused (403) as on every tenant endpoint.
func (s *Server) getTenant(w http.ResponseWriter, r *http.Request) error {
	p, err := s.authenticate(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := s.serves(id); err != nil {
		return err
	}
	if !p.Admin {
		own, err := s.deps.Store.GetTenant(r.Context(), p.TenantID)
		if err != nil {
			return err
		}
		if own.Status != hub.TenantActive {
			return hub.Errorf(hub.EFORBIDDEN, "tenant %q is inactive", own.ID)
		}
		if id != own.ID {
			return store.TenantNotFound(id)
		}
		writeJSON(w, http.StatusOK, toTenantJSON(own))
		return nil
	}
	t, err := s.deps.Store.GetTenant(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toTenantJSON(t))
	return nil
}

func (s *Server) updateTenant(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdminOf(r, r.PathValue("id")); err != nil {
		return err
	}
	var req struct {
		Name   *string           `json:"name"`
		Status *hub.TenantStatus `json:"status"`
	}
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.Name != nil && *req.Name == "" {
		return hub.Errorf(hub.EINVALID, "name: must not be empty")
	}
	if req.Name != nil {
		if err := hub.ValidateName(*req.Name); err != nil {
			return err
		}
	}
	t, err := s.deps.Store.UpdateTenant(r.Context(), store.UpdateTenantParams{ID: r.PathValue("id"), Name: req.Name, Status: req.Status})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toTenantJSON(t))
	return nil
}

// createKey: the key is in this answer and nowhere else, ever.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdminOf(r, r.PathValue("id")); err != nil {
		return err
	}
	if err := decode(w, r, &struct{}{}); err != nil {
		return err
	}
	tenantID := r.PathValue("id")
	k, key := apikey.New(tenantID, s.now())
	if err := s.deps.Store.CreateAPIKey(r.Context(), k); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": k.ID, "key": key, "tenant_id": tenantID, "created_at": k.CreatedAt})
	return nil
}

func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request) error {
	if err := s.requireAdminOf(r, r.PathValue("id")); err != nil {
		return err
	}
	if err := s.deps.Store.DeleteAPIKey(r.Context(), r.PathValue("id"), r.PathValue("key_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
