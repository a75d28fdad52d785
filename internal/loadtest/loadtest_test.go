package loadtest_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
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
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		cwd, config := t.TempDir(), t.TempDir()
		t.Chdir(cwd)
		t.Setenv("XDG_CONFIG_HOME", config)
		t.Setenv("HOME", config)
		o := loadtest.Options{Events: 300, Tenants: 10, Partitions: 2, Rate: 1000, Workers: 8, ClaimBatch: 16,
			Timeout: testkit.Patience, Progress: 200 * time.Millisecond, // the timeout: a safety net, not a speed
			Limits: 200 * time.Millisecond}
		if d.Name == "postgres" {
			o.DatabaseURL = testkit.PostgresURL(t)
			o.Idle, o.Statements = 300*time.Millisecond, 5
		}
		var out bytes.Buffer
		res, err := loadtest.Run(context.Background(), o, &out)
		if err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		if d.Name == "postgres" {
			// The hub's backends are found and their CPU summed; the
			// statements it sent are counted, the most frequent listed.
			var report bytes.Buffer
			loadtest.Report(&report, res)
			if res.PGBackends == 0 || res.PGCPU <= 0 || res.Idle == nil || res.Idle.PGBackends == 0 ||
				len(res.Statements) != 5 || !statementsCounted(res) || !strings.Contains(report.String(), "ms CPU per event") {
				t.Fatalf("result = %+v idle %+v\n%s", res, res.Idle, report.String())
			}
		}
		// The machine's limits were measured first: commits only on
		// PostgreSQL.
		commits := map[string]int{"postgres": 2, "sqlite": 0}[d.Name]
		if res.Limits == nil || res.Limits.HTTP.Requests <= 0 || len(res.Limits.Commits) != commits || !strings.Contains(out.String(), "bench: limits: loopback HTTP") {
			t.Fatalf("limits %+v\n%s", res.Limits, out.String())
		}
		var report bytes.Buffer
		loadtest.Report(&report, res)
		if !strings.Contains(report.String(), "\nmachine (") || !strings.Contains(report.String(), "  limits          loopback HTTP ") {
			t.Fatalf("report:\n%s", report.String())
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

// A short soak on each driver: produces at its rate to ordered and
// unordered subscriptions while receivers fail at random, prints a line
// per interval with the database's backlog and the pool's wait, drains,
// and sums up with nothing lost and the ordered tenants in order.
func TestRun_SoakPrintsLinesAndASummary(t *testing.T) {
	testkit.Long(t)
	if testing.Short() {
		t.Skip("a soak of a few seconds")
	}
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		t.Chdir(t.TempDir())
		// One-second retries keep the drain short: at the hub's curve a
		// second failure waits up to a minute.
		o := loadtest.Options{Soak: 3 * time.Second, Rate: 50, Tenants: 5, Ordered: 2, FailRate: 0.2, Progress: time.Second,
			RetrySchedule: []string{"1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s"}, Timeout: testkit.Patience}
		if d.Name == "postgres" {
			o.DatabaseURL = testkit.PostgresURL(t)
			o.Idle, o.Statements = 300*time.Millisecond, 5
		}
		var out bytes.Buffer
		res, err := loadtest.Run(context.Background(), o, &out)
		if err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		if d.Name == "postgres" {
			// The hub's backends are found and their CPU summed; the
			// statements it sent are counted, the most frequent listed.
			var report bytes.Buffer
			loadtest.Report(&report, res)
			if res.PGBackends == 0 || res.PGCPU <= 0 || res.Idle == nil || res.Idle.PGBackends == 0 ||
				len(res.Statements) != 5 || !statementsCounted(res) || !strings.Contains(report.String(), "ms CPU per event") {
				t.Fatalf("result = %+v idle %+v\n%s", res, res.Idle, report.String())
			}
		}
		loadtest.Report(&out, res)
		s := res.Soak
		if s == nil {
			t.Fatalf("no soak result\n%s", out.String())
		}
		if s.Produced != 150 || s.Expected != 150 || s.Delivered != 150 || s.Lost != 0 || s.Waiting != 0 || s.OrderedLate != 0 {
			t.Fatalf("soak %+v\n%s", s, out.String())
		}
		if s.Healthy.N == 0 || s.Healthy.N == 150 || s.Retried.N == 0 || s.Healthy.N+s.Retried.N != 150 {
			t.Errorf("healthy %+v, retried %+v: a fifth of the requests fail", s.Healthy, s.Retried)
		}
		if len(s.Lines) < 4 || !s.Lines[len(s.Lines)-1].Final {
			t.Fatalf("%d lines\n%s", len(s.Lines), out.String())
		}
		sawRetrying := false
		for _, l := range s.Lines {
			if !l.Counted || l.RSS <= 0 || l.PeakRSS < l.RSS {
				t.Errorf("line %+v", l)
			}
			sawRetrying = sawRetrying || l.Retrying > 0
		}
		if !sawRetrying {
			t.Errorf("no line saw a job waiting for its retry\n%s", out.String())
		}
		if d.Name == "postgres" && s.PoolCalls == 0 {
			t.Errorf("no pool wait observed on PostgreSQL")
		}
		for _, want := range []string{"rate 50/s for 3s (soak)", "5 healthy (20% of requests answered 500)", "max_in_flight 16, 2 ordered tenants at 1",
			"backlog", "retrying", "in flight", "rss", "(end)", "150 of the 150 events to healthy receivers", "0 lost", "2 tenants: in order", "verdict "} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("missing %q in\n%s", want, out.String())
			}
		}
	})
}

// With a shared host every tenant's receiver is one destination; hung and
// healthy tenants keep their classes, and the healthy ones get every event.
func TestRun_SharedHost(t *testing.T) {
	t.Chdir(t.TempDir())
	o := loadtest.Options{Events: 120, Tenants: 6, HungTenants: 2, Partitions: 2, Rate: 400, MaxInFlight: 64, SharedHost: true,
		Timeout: testkit.Patience}
	var out bytes.Buffer
	res, err := loadtest.Run(context.Background(), o, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	loadtest.Report(&out, res)
	if !res.SharedHost || len(res.Classes) != 2 || res.Classes[0].Delivered != 80 || res.Classes[1].Delivered != 0 || res.Classes[1].Received < 2 {
		t.Fatalf("result %+v\n%s", res, out.String())
	}
	for _, want := range []string{"all on one shared host", "max_in_flight 64", "every receiver on one shared host", "80/80 100%"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
}

// Two replicas on PostgreSQL: the bench's own hub and a streaming-hub
// serve process built from this tree share the schema and the consumer
// group. Every event is delivered once, in order, as with one; each
// replica's part is read from its metrics and reported, the parts add up
// to the receivers' count, the group gave each replica partitions, each
// replica's backends are found by their own application_name, and no
// process is left behind.
func TestRun_TwoReplicasShareTheLoad(t *testing.T) {
	testkit.Long(t)
	url := testkit.PostgresURL(t)
	bin := buildHub(t)
	t.Chdir(t.TempDir())
	// Small pools: two hubs share the server's 100 connections with
	// every other test package.
	o := loadtest.Options{Events: 300, Tenants: 10, Partitions: 4, Rate: 1000, DatabaseURL: url, Replicas: 2, ReplicaCommand: []string{bin, "serve"},
		Set: map[string]string{"DATABASE_MAX_CONNS": "4"}, Timeout: testkit.Patience, Progress: 200 * time.Millisecond}
	var out bytes.Buffer
	res, err := loadtest.Run(context.Background(), o, &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	loadtest.Report(&out, res)
	if pids := running(bin); len(pids) > 0 {
		t.Errorf("replica processes left running: %v", pids)
	}
	healthy := res.Classes[0]
	if res.Delivered != 300 || res.Duplicates != 0 || len(res.Classes) != 1 || healthy.Delivered != 300 || healthy.OutOfOrder != 0 {
		t.Fatalf("result %+v\n%s", res, out.String())
	}
	if len(res.Replicas) != 2 {
		t.Fatalf("replicas %+v\n%s", res.Replicas, out.String())
	}
	var delivered, ingested int64
	var partitions int
	var share float64
	for i, r := range res.Replicas {
		if r.Replica != i+1 || r.Err != "" || r.Attempts < r.Delivered || r.Partitions < 1 || r.PGBackends == 0 {
			t.Errorf("replica %+v\n%s", r, out.String())
		}
		delivered, ingested, partitions, share = delivered+r.Delivered, ingested+r.Ingested, partitions+r.Partitions, share+r.Share
	}
	if delivered != 300 || ingested != 300 || partitions != 4 || math.Abs(share-1) > 1e-9 {
		t.Errorf("sums: %d delivered, %d ingested, %d partitions, shares %v\n%s", delivered, ingested, partitions, share, out.String())
	}
	if res.Replicas[1].PID == os.Getpid() || res.Replicas[1].CPU <= 0 {
		t.Errorf("replica 2 is not a process of its own: %+v", res.Replicas[1])
	}
	for _, want := range []string{"bench: 2 replicas (role all, one schema, one consumer group): replica 1 in this process",
		"  replicas        2 (role all, one schema, one consumer group): 300 deliveries between them (receivers: 300 answered 2xx)",
		"\n    replica 1 ", "\n    replica 2 ", "300/300 100%"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
}

// buildHub builds the streaming-hub binary of this tree, for the replicas
// the bench starts as its own binary's serve.
func buildHub(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "streaming-hub")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/streaming-hub")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// running lists the processes running the binary bin.
func running(bin string) []string {
	var pids []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		if exe, err := os.Readlink(filepath.Join(p, "exe")); err == nil && exe == bin {
			pids = append(pids, filepath.Base(p))
		}
	}
	return pids
}

// statementsCounted: the most frequent statements are listed most frequent
// first and are part of all the statements counted. How many there are
// depends on how the load batched (a loaded machine batches more), so no
// total is asserted.
func statementsCounted(res loadtest.Result) bool {
	sum := 0
	for i, st := range res.Statements {
		if st.Count <= 0 || (i > 0 && st.Count > res.Statements[i-1].Count) {
			return false
		}
		sum += st.Count
	}
	return sum > 0 && sum <= res.StatementsRun
}
