package api

import (
	"context"
	"net/http"
	"sort"
	"time"
)

// healthz answers 200 while the process serves: the liveness probe.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.deps.Version})
}

// readyz runs every readiness check (store reachable, Kafka joined and
// reachable, ...) and answers 503 naming the ones that fail.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	names := make([]string, 0, len(s.deps.Ready))
	for name := range s.deps.Ready {
		names = append(names, name)
	}
	sort.Strings(names)
	checks := make(map[string]string, len(names))
	status := http.StatusOK
	for _, name := range names {
		if err := s.deps.Ready[name](ctx); err != nil {
			checks[name] = err.Error()
			status = http.StatusServiceUnavailable
		} else {
			checks[name] = "ok"
		}
	}
	if s.deps.Draining != nil && s.deps.Draining() {
		checks["shutdown"] = "draining: the process is stopping"
		status = http.StatusServiceUnavailable
	}
	state := "ready"
	if status != http.StatusOK {
		state = "unavailable"
	}
	writeJSON(w, status, map[string]any{"status": state, "checks": checks})
}
