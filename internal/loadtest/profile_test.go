package loadtest

import (
	"bytes"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestNormalize_ProfilesAndTheirMistakes(t *testing.T) {
	o, err := Options{Rate: 100, Duration: 30 * time.Second, Tenants: 50, HungTenants: 8}.Normalize()
	if err != nil || o.Events != 3000 || o.MaxInFlight != 1 || o.Hang != 30*time.Second || o.Workers != 0 || o.ClaimBatch != 0 {
		t.Fatalf("rate × duration: %+v, %v", o, err)
	}
	if again, err := o.Normalize(); err != nil || again.Events != o.Events { // Run normalizes what the CLI normalized
		t.Fatalf("normalized twice: %+v, %v", again, err)
	}
	if o, err := (Options{Set: map[string]string{"DELIVERY_TIMEOUT": "5s"}}).Normalize(); err != nil || o.Set["STREAMING_HUB_DELIVERY_TIMEOUT"] != "5s" || o.Events != 100_000 {
		t.Fatalf("set without prefix: %+v, %v", o.Set, err)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Duration: time.Second}, "duration needs a rate"},
		{Options{Duration: time.Second, Rate: 10, Events: 5}, "either events or duration"},
		{Options{Tenants: 10, HungTenants: 6, FailingTenants: 5}, "more than the 10 tenants"},
		{Options{Tenants: 2, HungTenants: 2}, "no tenant is healthy"},
		{Options{MaxInFlight: 65}, "max_in_flight"},
		{Options{SinkLatency: -time.Millisecond}, "cannot be negative"},
		{Options{Drain: time.Hour}, "not shorter than the timeout"},
		{Options{Set: map[string]string{"DISPATCH_WORKER": "3"}}, "did you mean STREAMING_HUB_DISPATCH_WORKERS"},
	} {
		if _, err := tc.o.Normalize(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestClasses_HungThenFailingThenHealthyAndTheirEvents(t *testing.T) {
	o := Options{Tenants: 5, HungTenants: 1, FailingTenants: 2, Events: 12}
	var got []Class
	for i := range o.Tenants {
		got = append(got, o.classOf(i))
	}
	if want := []Class{Hung, Failing, Failing, Healthy, Healthy}; !equal(got, want) {
		t.Fatalf("classes %v, want %v", got, want)
	}
	// Events 0..11 round-robin: tenants 0 and 1 get 3, the others 2.
	if n := o.expected(); n[Hung] != 3 || n[Failing] != 5 || n[Healthy] != 4 {
		t.Fatalf("expected %v", n)
	}
}

func equal(a, b []Class) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLatency_LogNormalAroundTheMedian(t *testing.T) {
	if d := newLatency(100*time.Millisecond, 0, 1).draw(); d != 100*time.Millisecond {
		t.Fatalf("no spread: %v", d)
	}
	if d := newLatency(0, 0.5, 1).draw(); d != 0 {
		t.Fatalf("no latency: %v", d)
	}
	l := newLatency(100*time.Millisecond, 0.25, 7)
	draws := make([]time.Duration, 20001)
	for i := range draws {
		draws[i] = l.draw()
	}
	sort.Slice(draws, func(i, j int) bool { return draws[i] < draws[j] })
	// log-normal, σ 0.25: median 100 ms, p99 = 100 ms × e^(0.25 × 2.326) ≈ 179 ms.
	if p50 := quantile(draws, 0.5); p50 < 97*time.Millisecond || p50 > 103*time.Millisecond {
		t.Errorf("p50 %v", p50)
	}
	if p99 := quantile(draws, 0.99); p99 < 165*time.Millisecond || p99 > 195*time.Millisecond {
		t.Errorf("p99 %v", p99)
	}
	if draws[0] <= 0 || draws[len(draws)-1] > maxLatencyFactor*100*time.Millisecond {
		t.Errorf("range %v..%v", draws[0], draws[len(draws)-1])
	}
	if p := sinkProfile(Options{SinkLatency: 100 * time.Millisecond, SinkSpread: 0.25}); p.P99 < 178*time.Millisecond || p.P99 > 180*time.Millisecond {
		t.Errorf("profile p99 %v", p.P99)
	}
}

func TestProc_CPUAndPeakRSSAreRead(t *testing.T) {
	// A command name with spaces and parentheses must not shift the fields.
	stat := "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 130 0 0 20 0 9 0 1000 0 0"
	if got := parseStatCPU(stat); got != 3800*time.Millisecond {
		t.Fatalf("cpu %v, want 3.8s", got)
	}
	if got := parseHWM("Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1000 kB\n"); got != 2048<<10 {
		t.Fatalf("hwm %d", got)
	}
	if cpuTime() < 0 || peakRSS() <= 0 { // a fresh test process may not have used 10 ms of CPU yet
		t.Fatalf("this process: cpu %v, rss %d", cpuTime(), peakRSS())
	}
}

func TestReport_OneLinePerClassWithItsCounts(t *testing.T) {
	res := Result{Events: 3000, Elapsed: 4 * time.Second, Delivered: 2519, Database: "SQLite", Settings: "8 workers", Drain: 20 * time.Second,
		CPU: 2 * time.Second, CPUPerDelivery: 794 * time.Microsecond, PeakRSS: 80 << 20,
		Sink: SinkProfile{Median: 100 * time.Millisecond, Spread: 0.25, P50: 100 * time.Millisecond, P99: 179 * time.Millisecond},
		Classes: []ClassResult{
			{Class: Healthy, Tenants: 42, Expected: 2520, Delivered: 2519, Received: 2520, Attempts: 2521, P50: 5 * time.Millisecond, P99: 40 * time.Millisecond, DeliveryRate: 84, LastAfterProduce: 1500 * time.Millisecond},
			{Class: Hung, Tenants: 8, Expected: 480, Attempts: 16, Received: 8, P50: 3 * time.Millisecond},
			{Class: Failing, Tenants: 0, Expected: 0},
		},
	}
	var b bytes.Buffer
	Report(&b, res)
	out := b.String()
	for _, want := range []string{
		"0.79 ms per delivery (2s in all, 50% of one core", "peak RSS        80 MB", "up to 20s after the last produce",
		"median 100ms, log-normal spread 0.25", "2519 delivered (0 duplicate deliveries) of 3000",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			lines[f[0]] = l
		}
	}
	// A loss is never rounded up to 100%.
	if l := lines["healthy"]; !strings.Contains(l, "2519/2520 99.9%") || !strings.Contains(l, "+1.5s after last produce") || !strings.Contains(l, "84/s") {
		t.Errorf("healthy line: %q", l)
	}
	if l := lines["hung"]; !strings.Contains(l, "0/480 0%") || !strings.Contains(l, " 16 ") {
		t.Errorf("hung line: %q", l)
	}
	if l := lines["failing"]; !strings.Contains(l, "0/0 -") {
		t.Errorf("failing line: %q", l)
	}
}
