package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Call serves one API request inside the process as p, through the same
// routes, handlers, validation and authorization rules a client over HTTP
// meets: the console is a client of the API, not a second copy of its
// rules. tenantID is sent as X-Tenant-Id (the admin names the tenant of a
// tenant-scoped endpoint with it). body, when not nil, is sent as JSON. It
// answers the status and the JSON body.
func (s *Server) Call(ctx context.Context, p Principal, tenantID, method, target string, body any) (int, []byte, error) {
	var rd *bytes.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(data)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(WithPrincipal(ctx, p), method, target, rd)
	if err != nil {
		return 0, nil, err
	}
	req.RemoteAddr = "127.0.0.1:0"
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tenantID != "" {
		req.Header.Set("X-Tenant-Id", tenantID)
	}
	rec := httptest.NewRecorder()
	s.route(rec, req)
	return rec.Code, rec.Body.Bytes(), nil
}

// RecentEvents answers a tenant's events newest first, as GET /v1/events
// shows each event, for the console's events page (the pull API is oldest
// first by contract). The tenant is checked as every tenant-scoped
// endpoint checks it. before > 0 keeps only sequences below it.
func (s *Server) RecentEvents(ctx context.Context, p Principal, tenantID string, before int64, limit int) ([]byte, error) {
	req, err := http.NewRequestWithContext(WithPrincipal(ctx, p), http.MethodGet, "/v1/events", nil)
	if err != nil {
		return nil, err
	}
	// The route this read stands for: a JWT session is authorized for it.
	req.Pattern = "GET /v1/events"
	if tenantID != "" {
		req.Header.Set("X-Tenant-Id", tenantID)
	}
	tenant, err := s.tenantScope(req)
	if err != nil {
		return nil, err
	}
	evs, err := s.deps.Store.ListEvents(ctx, store.ListEventsParams{TenantID: tenant, Newest: true, Before: before, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]eventJSON, len(evs))
	for i, ev := range evs {
		out[i] = toEventJSON(ev)
	}
	return json.Marshal(out)
}
