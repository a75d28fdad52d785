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

// Receiver profiles: each class of tenant is counted apart. The healthy
// tenants get every event; the hung tenant's receiver is reached but never
// answers within the hub's timeout, the failing one answers 500: neither
// counts a delivery, and neither hides the healthy figures.
func TestRun_CountsHungAndFailingTenantsApart(t *testing.T) {
	t.Chdir(t.TempDir())
	o := loadtest.Options{Events: 120, Tenants: 6, HungTenants: 1, FailingTenants: 1, Partitions: 2, Rate: 400,
		SinkLatency: 5 * time.Millisecond, SinkSpread: 0.25, Timeout: 2 * time.Minute}
	var out bytes.Buffer
	res, err := loadtest.Run(context.Background(), o, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(res.Classes) != 3 {
		t.Fatalf("classes %+v", res.Classes)
	}
	byClass := map[loadtest.Class]loadtest.ClassResult{}
	for _, c := range res.Classes {
		byClass[c.Class] = c
	}
	healthy, hung, failing := byClass[loadtest.Healthy], byClass[loadtest.Hung], byClass[loadtest.Failing]
	if healthy.Tenants != 4 || healthy.Expected != 80 || healthy.Delivered != 80 || healthy.OutOfOrder != 0 || healthy.P50 <= 0 || healthy.P99 < healthy.P50 {
		t.Errorf("healthy %+v", healthy)
	}
	if hung.Tenants != 1 || hung.Expected != 20 || hung.Delivered != 0 || hung.Received < 1 {
		t.Errorf("hung %+v", hung)
	}
	if failing.Tenants != 1 || failing.Expected != 20 || failing.Delivered != 0 || failing.Attempts < 1 {
		t.Errorf("failing %+v", failing)
	}
	if res.Delivered != 80 || res.Drain != 0 || res.CPU <= 0 || res.CPUPerDelivery <= 0 || res.PeakRSS <= 0 {
		t.Errorf("totals %+v", res)
	}
	loadtest.Report(&out, res)
	for _, want := range []string{"1 hung (answer after 30s), 1 failing (answer 500)", "80/80 100%", "0/20 0%"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
}
