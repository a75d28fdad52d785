package api

import (
	"net/http"
	"path"
	"strings"

	hub "github.com/lerianstudio/streaming-hub"
)

// methods are those the API answers on some path; Allow lists those of a
// path's routes.
var methods = []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete}

// route answers what the mux would answer in plain text or with a redirect:
// unknown paths are 404 not_found and known paths with another method 405
// method_not_allowed (with Allow), both as the JSON envelope. A path that is
// not clean (//v1//tenants) or carries bytes no id has (NUL, invalid UTF-8,
// control characters) names nothing: 404 too, before any handler or
// database sees it.
func (s *Server) route(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	for _, m := range s.mounts {
		if p == strings.TrimSuffix(m.prefix, "/") || strings.HasPrefix(p, m.prefix) {
			m.h.ServeHTTP(w, r)
			return
		}
	}
	if !hub.PlainText(p) || p != path.Clean(p) && p+"/" != path.Clean(p)+"/" || strings.Contains(p, "//") {
		s.notFound(w)
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		var allow []string
		for _, m := range methods {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, pat := s.mux.Handler(probe); pat != "" {
				allow = append(allow, m)
			}
		}
		if len(allow) == 0 {
			s.notFound(w)
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, errorBody{errorDetail{Code: "method_not_allowed",
			Message: r.Method + " is not allowed here; allowed: " + strings.Join(allow, ", ")}})
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, errorBody{errorDetail{Code: hub.ENOTFOUND, Message: "no such resource"}})
}

type mount struct {
	prefix string
	h      http.Handler
}

// Mount serves every path under prefix (and prefix without its slash) with
// h, inside the server's request log and tracing: the console is served
// this way on every role that serves the API. Call it before Handler.
func (s *Server) Mount(prefix string, h http.Handler) {
	s.mounts = append(s.mounts, mount{prefix, h})
}
