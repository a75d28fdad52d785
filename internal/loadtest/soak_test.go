package loadtest

import (
	"bytes"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestNormalize_SoakDefaultsAndMistakes(t *testing.T) {
	o, err := Options{Soak: time.Minute, Ordered: 20}.Normalize()
	if err != nil || o.Rate != 200 || o.Events != 12_000 || o.MaxInFlight != 16 || o.Progress != 10*time.Second ||
		o.Timeout != 11*time.Minute || o.SlowLatency != time.Second || o.Tenants != 100 {
		t.Fatalf("soak: %+v, %v", o, err)
	}
	if again, err := o.Normalize(); err != nil || again.Events != o.Events { // Run normalizes what the CLI normalized
		t.Fatalf("normalized twice: %+v, %v", again, err)
	}
	// Outside a soak, subscriptions keep the API's default.
	if o, err := (Options{Ordered: 3, Tenants: 10}).Normalize(); err != nil || o.MaxInFlight != 1 || o.Timeout != 10*time.Minute {
		t.Fatalf("no soak: %+v, %v", o, err)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Soak: time.Minute, Duration: time.Minute, Rate: 10}, "either soak or duration"},
		{Options{Soak: time.Minute, Events: 5}, "either events or soak"},
		{Options{Soak: -time.Second}, "cannot be negative"},
		{Options{Soak: time.Minute, Timeout: 30 * time.Second}, "not longer than the soak"},
		{Options{Tenants: 5, Ordered: 6}, "ordered tenants 6: want 0 to the 5 tenants"},
		{Options{FailRate: 1}, "fail rate 1: want a share from 0 to below 1"},
		{Options{FailRate: -0.1}, "fail rate -0.1"},
		{Options{FailRate: math.NaN()}, "fail rate NaN"},
		{Options{SlowRate: 1.5}, "slow rate 1.5"},
		{Options{SlowLatency: -time.Second}, "slow latency cannot be negative"},
		{Options{RetrySchedule: []string{"soon"}}, "retry schedule"},
	} {
		if _, err := tc.o.Normalize(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestOrdered_TheLastTenantsAtOne(t *testing.T) {
	o := Options{Tenants: 5, Ordered: 2, MaxInFlight: 16}
	var got []int
	for i := range o.Tenants {
		got = append(got, o.maxInFlightOf(i))
	}
	if want := []int{16, 16, 16, 1, 1}; !equalInts(got, want) {
		t.Fatalf("max_in_flight %v, want %v", got, want)
	}
	if o.ordered(2) || !o.ordered(3) {
		t.Fatal("ordered")
	}
	if got := describeMaxInFlight(o); got != "max_in_flight 16, 2 ordered tenants at 1" {
		t.Fatal(got)
	}
}

func equalInts(a, b []int) bool {
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

// Random failures and slow answers are drawn per receiver from a seeded
// generator: the same tenant draws the same sequence in every run, at the
// rates asked for, and a receiver without them draws nothing.
func TestMishaps_SeededAndAtTheirRates(t *testing.T) {
	if m := newMishaps(0, 0, 1); m != nil {
		t.Fatal("no mishaps should be nil")
	}
	if fail, slow := (*mishaps)(nil).draw(); fail || slow {
		t.Fatal("nil mishaps drew")
	}
	a, b := newMishaps(0.05, 0.2, 7), newMishaps(0.05, 0.2, 7)
	fails, slows := 0, 0
	const n = 20_000
	for range n {
		fa, sa := a.draw()
		fb, sb := b.draw()
		if fa != fb || sa != sb {
			t.Fatal("the same seed drew differently")
		}
		if fa {
			fails++
		}
		if sa {
			slows++
		}
	}
	if f := float64(fails) / n; f < 0.045 || f > 0.055 {
		t.Errorf("fail share %.3f, want 0.05", f)
	}
	if s := float64(slows) / n; s < 0.19 || s > 0.21 {
		t.Errorf("slow share %.3f, want 0.2", s)
	}
	// Failing and hung receivers keep their own behaviour: no mishaps.
	o := Options{Tenants: 3, HungTenants: 1, FailingTenants: 1, FailRate: 0.5, SlowRate: 0.5, SlowLatency: time.Second}
	for tenant, want := range []bool{false, false, true} {
		if got := newReceiver(o, tenant, newRecorder(0), nil).mishaps != nil; got != want {
			t.Errorf("tenant %d has mishaps %v, want %v", tenant, got, want)
		}
	}
}

// On a shared host every tenant's receiver is one server (one host:port),
// each at /hook/<tenant>, and each keeps its class: a request reaches the
// tenant its path names.
func TestSharedHost_OneServerAPathEach(t *testing.T) {
	o := Options{Tenants: 3, FailingTenants: 1, Hang: time.Second, SlowLatency: time.Second}
	rec := newRecorder(10)
	stop := make(chan struct{})
	defer close(stop)
	receivers := make([]*receiver, o.Tenants)
	for i := range receivers {
		receivers[i] = newReceiver(o, i, rec, stop)
	}
	servers, err := startReceivers(receivers, true)
	if err != nil {
		t.Fatal(err)
	}
	defer servers[0].Close()
	if len(servers) != 1 {
		t.Fatalf("%d servers", len(servers))
	}
	base := strings.TrimSuffix(receivers[0].url, "/hook/tenant-000")
	for i, r := range receivers {
		if r.url != base+"/hook/"+tenantName(i) {
			t.Fatalf("receiver %d at %s (base %s)", i, r.url, base)
		}
	}
	post := func(url, id string) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"sent_ns":1,"pad":""}`))
		req.Header.Set("X-Lerian-Event-Id", id)
		req.Header.Set("X-Lerian-Sequence", "1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(receivers[0].url, "a"); code != http.StatusInternalServerError {
		t.Errorf("failing tenant answered %d", code)
	}
	if code := post(receivers[2].url, "b"); code != http.StatusNoContent {
		t.Errorf("healthy tenant answered %d", code)
	}
	if code := post(base+"/hook/tenant-999", "c"); code != http.StatusNotFound {
		t.Errorf("unknown tenant answered %d", code)
	}
	if !rec.reachedAll([]int{0, 2}) || rec.reachedAll([]int{1}) || rec.delivered(Healthy) != 1 || rec.delivered(Failing) != 0 {
		t.Fatalf("recorder: reached %v, delivered %d", rec.reached, rec.delivered(Healthy))
	}
	if !strings.Contains(describeHosts(Options{SharedHost: true}, 1), "one shared host") {
		t.Fatal(describeHosts(Options{SharedHost: true}, 1))
	}
}

// The recorder tells events delivered at their first attempt (healthy
// latency samples, also by window) from those delivered after a failed
// one, and counts out-of-order first receipts per tenant.
func TestRecorder_FirstAttemptsRetriesAndWindows(t *testing.T) {
	rc := newRecorder(4)
	now := time.Now()
	if !rc.received(Healthy, 0, "a", 1, now, now) || rc.received(Healthy, 0, "a", 1, now, now) {
		t.Fatal("first receipt")
	}
	rc.answered(Healthy, "a", now, 30*time.Millisecond, false) // a's second attempt succeeded
	rc.received(Healthy, 0, "b", 2, now, now)
	rc.answered(Healthy, "b", now, 10*time.Millisecond, true)
	rc.answered(Healthy, "b", now, 10*time.Millisecond, true) // a duplicate
	if w := rc.takeWindow(); len(w) != 1 || w[0] != 10*time.Millisecond {
		t.Fatalf("window %v", w)
	}
	if w := rc.takeWindow(); len(w) != 0 {
		t.Fatalf("second window %v", w)
	}
	rc.received(Healthy, 1, "d", 5, now, now)
	rc.received(Healthy, 1, "c", 4, now, now) // late
	first, retried := rc.latencies()
	if len(first) != 1 || len(retried) != 1 || retried[0] != 30*time.Millisecond {
		t.Fatalf("first %v, retried %v", first, retried)
	}
	if rc.lateAt([]int{0}) != 0 || rc.lateAt([]int{0, 1}) != 1 || !rc.isDelivered("b") || rc.isDelivered("c") {
		t.Fatal("late or delivered")
	}
	if res := rc.class(Healthy, 2, 4, now); res.Duplicates != 1 || res.Delivered != 2 || res.OutOfOrder != 1 {
		t.Fatalf("class %+v", res)
	}
}

// An undelivered event is lost only when no job holds it any more; one
// still pending (a retry not yet due) is waiting. Events of hung and
// failing tenants are not expected.
func TestUndelivered_WaitingOrLost(t *testing.T) {
	o := Options{Tenants: 3, HungTenants: 1, Events: 9} // tenant 0 hung: events 0, 3, 6
	delivered := map[string]bool{eventID(1): true, eventID(2): true, eventID(4): true, eventID(5): true}
	live := map[string]bool{eventID(7): true, eventID(0): true}
	waiting, lost := undelivered(o, 9, func(id string) bool { return delivered[id] }, live)
	if waiting != 1 || lost != 1 { // 7 waits, 8 is lost
		t.Fatalf("waiting %d, lost %d", waiting, lost)
	}
	if waiting, lost := undelivered(o, 6, func(id string) bool { return delivered[id] }, live); waiting != 0 || lost != 0 {
		t.Fatalf("only 6 produced: waiting %d, lost %d", waiting, lost)
	}
}

func TestHistogramTotals_SumAndCountOverLabels(t *testing.T) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "x", Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"budget"})
	if sum, n := histogramTotals(h); sum != 0 || n != 0 {
		t.Fatalf("empty: %v %d", sum, n)
	}
	h.WithLabelValues("ingest").Observe(0.25)
	h.WithLabelValues("dispatch").Observe(0)
	h.WithLabelValues("dispatch").Observe(0.5)
	if sum, n := histogramTotals(h); sum != 0.75 || n != 3 {
		t.Fatalf("sum %v, count %d", sum, n)
	}
}

func TestSoakLine_AndSummaryWithItsVerdict(t *testing.T) {
	l := SoakLine{Elapsed: 10 * time.Second, Produced: 2000, Delivered: 1990, Due: 3, Retrying: 12, InFlight: 8, Counted: true,
		P50: 4 * time.Millisecond, P99: 20 * time.Millisecond, Samples: 1890, PoolWait: 12 * time.Millisecond, PoolCalls: 4000,
		RSS: 120 << 20, PeakRSS: 130 << 20}
	got := formatSoakLine(l, "PostgreSQL")
	for _, want := range []string{"10.0s", "produced    2000", "delivered    1990", "backlog     3", "retrying    12", "in flight     8",
		"p50     4ms", "p99    20ms", "(n  1890)", "pool wait     12.0 ms (0.003 ms/call)", "rss  120 MB (peak 130 MB)"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %q", want, got)
		}
	}
	if got := formatSoakLine(SoakLine{}, "SQLite"); !strings.Contains(got, "backlog     ?") || !strings.Contains(got, "pool wait n/a") || !strings.Contains(got, "p50       -") {
		t.Errorf("empty line %q", got)
	}

	s := &SoakResult{Duration: time.Minute, Rate: 200, Tenants: 100, Ordered: 20, Produced: 12000, Expected: 12000, Delivered: 11999,
		Waiting: 1, Ended: "the drain (20s after the last produce) was over", MaxDue: 40, MaxRetrying: 90, MaxInFlight: 30, BacklogBound: 1000,
		Healthy: Quantiles{N: 11400, P50: 5 * time.Millisecond, P99: 40 * time.Millisecond, Max: 300 * time.Millisecond},
		Retried: Quantiles{N: 599, P50: 3 * time.Second, P99: 50 * time.Second, Max: 70 * time.Second}, WorstWindowP99: 60 * time.Millisecond,
		PoolWait: 1500 * time.Millisecond, PoolCalls: 100000, CPUPerDelivery: 350 * time.Microsecond, PeakRSS: 180 << 20}
	var b bytes.Buffer
	Report(&b, Result{Database: "PostgreSQL", Settings: "defaults", Elapsed: 80 * time.Second, Soak: s,
		Classes: []ClassResult{{Class: Healthy, Tenants: 100, Expected: 12000, Delivered: 11999}}})
	out := b.String()
	for _, want := range []string{
		"12000 events in 1m0s at 200/s to 100 tenants (20 ordered)",
		"11999 of the 12000 events to healthy receivers (0 duplicate deliveries); 0 lost; 1 still waiting for a retry",
		"max 40 due jobs at a line (bound 1000: 5 s of production); max 90 waiting for a retry",
		"p50 5ms  p99 40ms", "worst line's p99 60ms", "599 events delivered after a failed attempt",
		"1500.0 ms in all over 100000 calls", "0.35 ms per delivery", "peak RSS        180 MB", "20 tenants: in order",
		"verdict         PASS", "11999/12000 99.9%",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	for _, tc := range []struct {
		change func(*SoakResult)
		want   string
	}{
		{func(s *SoakResult) { s.MaxDue = 1001 }, "FAIL: backlog ≤ 1000 beyond the retrying at every line NOT MET"},
		{func(s *SoakResult) { s.WorstWindowP99 = 1100 * time.Millisecond }, "healthy p99 ≤ 1s (overall and every line) NOT MET"},
		{func(s *SoakResult) { s.Lost = 2 }, "2 lost"},
		{func(s *SoakResult) { s.Lost = 2 }, "nothing lost NOT MET"},
	} {
		c := *s
		tc.change(&c)
		b.Reset()
		Report(&b, Result{Soak: &c})
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("missing %q in\n%s", tc.want, b.String())
		}
	}
}

func TestProc_CurrentRSS(t *testing.T) {
	if got := parseStatusKB("VmHWM:\t    2048 kB\nVmRSS:\t 1000 kB\n", "VmRSS:"); got != 1000<<10 {
		t.Fatalf("rss %d", got)
	}
	if currentRSS() <= 0 || currentRSS() > peakRSS() {
		t.Fatalf("rss %d, peak %d", currentRSS(), peakRSS())
	}
}

func TestPlainURL_DropsPoolSettings(t *testing.T) {
	got := plainURL("postgres://u@h:5432/db?pool_max_conns=4&search_path=bench_x&sslmode=disable")
	if strings.Contains(got, "pool_") || !strings.Contains(got, "search_path=bench_x") || !strings.Contains(got, "sslmode=disable") {
		t.Fatal(got)
	}
}
