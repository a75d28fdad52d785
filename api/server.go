package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/lerianstudio/streaming-hub/metrics"
	"github.com/lerianstudio/streaming-hub/store"
)

// Deps are what the API serves from.
type Deps struct {
	Store      store.Store
	Metrics    *metrics.Metrics
	Logger     *slog.Logger
	AdminToken string
	Version    string
	// Ready are the readiness checks by name (store, kafka, ...): /readyz
	// answers 200 only when every one passes.
	Ready map[string]func(context.Context) error
}

// Server routes requests to handlers.
type Server struct {
	deps   Deps
	mux    *http.ServeMux
	routes []route
}

// route is one registered endpoint; the list is what the OpenAPI test
// compares against the document.
type route struct {
	Method, Path string
}

// New builds the server and registers every route.
func New(deps Deps) *Server {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{deps: deps, mux: http.NewServeMux()}
	s.plain("GET", "/healthz", http.HandlerFunc(s.healthz))
	s.plain("GET", "/readyz", http.HandlerFunc(s.readyz))
	if deps.Metrics != nil {
		s.plain("GET", "/metrics", deps.Metrics.Handler())
	}
	s.handle("GET", "/v1/openapi.json", s.openAPI)
	s.handle("GET", "/v1/admin/rejections", s.listRejections)
	return s
}

// Handler returns the server with its middleware.
func (s *Server) Handler() http.Handler {
	return withRequestLog(s.deps.Logger, s.mux)
}

// plain registers a handler that writes its own answer.
func (s *Server) plain(method, path string, h http.Handler) {
	s.routes = append(s.routes, route{method, path})
	s.mux.Handle(method+" "+path, h)
}

// handle registers a handler that returns an error.
func (s *Server) handle(method, path string, fn func(http.ResponseWriter, *http.Request) error) {
	s.routes = append(s.routes, route{method, path})
	s.mux.HandleFunc(method+" "+path, func(w http.ResponseWriter, r *http.Request) {
		if err := fn(w, r); err != nil {
			writeError(w, r, s.deps.Logger, err)
		}
	})
}
