package api

import (
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
)

// Every API route a JWT may reach names its access manager resource.
func TestAccessManager_EveryRouteHasAResource(t *testing.T) {
	d := config.Defaults(config.Serve)
	s, err := New(Deps{Metrics: metrics.New(), Pull: d.Pull, AuthFailureLimit: 1, HealthWindow: d.Housekeeping.HealthWindow})
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"tenants": true, "keys": true, "subscriptions": true, "deliveries": true, "events": true,
		"event-types": true, "manifests": true, "rejections": true, "portal-links": true, "dlq": true}
	for _, r := range s.routes {
		p := r.Method + " " + r.Path
		if unauthenticatedRoutes[p] {
			continue
		}
		a := routeAccess[p]
		if !known[a.Resource] || a.Action != strings.ToLower(r.Method) {
			t.Errorf("%s: no access manager resource and action in routeAccess (got %+v)", p, a)
		}
	}
}
