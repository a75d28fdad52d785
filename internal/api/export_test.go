package api

import "time"

// SetPullRecheck sets how long s's long polls wait between looks when no
// wake-up comes (1 s in production).
func SetPullRecheck(s *Server, d time.Duration) { s.pullRecheck = d }

// Routes lists s's routes as "METHOD /path/{param}", and whether each
// answers without credentials.
func Routes(s *Server) map[string]bool {
	out := map[string]bool{}
	for _, r := range s.routes {
		p := r.Method + " " + r.Path
		out[p] = unauthenticatedRoutes[p]
	}
	return out
}
