package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
)

// STREAMING_HUB_METRICS_ENABLED=false serves no /metrics route; the
// default serves it.
func TestMetricsRoute_OffWhenMetricsDisabled(t *testing.T) {
	d := config.Defaults(config.Serve)
	for _, off := range []bool{false, true} {
		srv, err := api.New(api.Deps{Metrics: metrics.New(), Pull: d.Pull, AuthFailureLimit: d.AuthFailureLimit,
			HealthWindow: d.Housekeeping.HealthWindow, NoMetrics: off})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		want := http.StatusOK
		if off {
			want = http.StatusNotFound
		}
		if rec.Code != want {
			t.Errorf("NoMetrics=%v: GET /metrics = %d, want %d", off, rec.Code, want)
		}
	}
}
