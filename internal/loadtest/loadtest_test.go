package loadtest_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/loadtest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A small run of the load command on each driver: every event is
// delivered, the report has its figures, and nothing is left behind in the
// working directory or the user's config folder (the hub gets its own
// secrets).
func TestRun_DeliversEveryEventAndReports(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		cwd, config := t.TempDir(), t.TempDir()
		t.Chdir(cwd)
		t.Setenv("XDG_CONFIG_HOME", config)
		t.Setenv("HOME", config)
		o := loadtest.Options{Events: 300, Tenants: 10, Partitions: 2, Rate: 1000, Workers: 8, ClaimBatch: 16,
			Timeout: testkit.Patience, Progress: 200 * time.Millisecond} // the timeout: a safety net, not a speed
		if d.Name == "postgres" {
			o.DatabaseURL = testkit.PostgresURL(t)
		}
		var out bytes.Buffer
		res, err := loadtest.Run(context.Background(), o, &out)
		if err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		if res.Delivered != 300 || res.IngestRate <= 0 || res.DeliveryRate <= 0 || res.P50 <= 0 || res.P99 < res.P50 || res.PeakRSS <= 0 {
			t.Fatalf("result = %+v", res)
		}
		if !strings.Contains(out.String(), "delivered") || !strings.Contains(out.String(), "300 events over 10 tenants") {
			t.Fatalf("output:\n%s", out.String())
		}
		for _, dir := range []string{cwd, config} {
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("the run wrote %s in %s", entries[0].Name(), dir)
			}
		}
	})
}
