package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
