package console

import (
	"net/http"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/api"
)

// Every console page and form (but sign-out) names the API route behind
// it, and every such route is in the API's table of resources and actions.
func TestBehind_EveryPageHasARoute(t *testing.T) {
	c := &Console{mux: http.NewServeMux()}
	c.routes()
	for _, p := range c.patterns {
		if p == signOutPattern {
			continue
		}
		routes := []string{behind[p]}
		if ops, ok := behindOps[p]; ok {
			routes = nil
			for _, r := range ops {
				routes = append(routes, r)
			}
		} else if p == "GET /console/{$}" {
			routes = []string{"GET /v1/tenants", "GET /v1/subscriptions"}
		}
		if _, listed := behind[p]; !listed {
			t.Errorf("%s: not in behind", p)
			continue
		}
		for _, r := range routes {
			if _, ok := api.RouteAccess(r); !ok {
				t.Errorf("%s: the route behind it, %q, has no resource and action in the API's table", p, r)
			}
		}
	}
}
