package main

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/loadtest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestBenchFlags_ProfilesAtTheHubsDefaults(t *testing.T) {
	o, err := benchFlags([]string{"-tenants", "50", "-rate", "100", "-duration", "30s", "-hung-tenants", "8",
		"-failing-tenants", "2", "-sink-latency", "100ms", "-drain", "20s", "-set", "DELIVERY_TIMEOUT=10s"}, env{getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	if o.Events != 3000 || o.Tenants != 50 || o.HungTenants != 8 || o.FailingTenants != 2 || o.SinkLatency != 100*time.Millisecond ||
		o.SinkSpread != 0.25 || o.Hang != 30*time.Second || o.Drain != 20*time.Second || o.MaxInFlight != 1 ||
		o.Set["STREAMING_HUB_DELIVERY_TIMEOUT"] != "10s" {
		t.Fatalf("%+v", o)
	}
	// Nothing overrides the hub's dispatch settings unless asked.
	if o.Workers != 0 || o.ClaimBatch != 0 || len(o.Set) != 1 {
		t.Fatalf("workers %d, claim batch %d, set %v", o.Workers, o.ClaimBatch, o.Set)
	}
	if o, err := benchFlags(nil, env{getenv: func(string) string { return "" }}); err != nil || o.Events != 100_000 || o.Tenants != 100 {
		t.Fatalf("no flags: %+v, %v", o, err)
	}
}

func TestBench_ProfileMistakesAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-tenants", "5", "-hung-tenants", "6"}, "more than the 5 tenants"},
		{[]string{"-duration", "30s"}, "duration needs a rate"},
		{[]string{"-rate", "10", "-duration", "30s", "-events", "5"}, "either events or duration"},
		{[]string{"-set", "DISPATCH_WORKER=3"}, "STREAMING_HUB_DISPATCH_WORKER: unknown; did you mean STREAMING_HUB_DISPATCH_WORKERS?"},
		{[]string{"-set", "nonsense"}, "want NAME=VALUE"},
		{[]string{"-sink-latency", "soon"}, "invalid value"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-limits", "soon"}, `invalid value "soon" for flag --limits`},
	} {
		code, _, errOut := runCmd(nil, append([]string{"bench"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
}

func TestBenchFlags_SoakDefaults(t *testing.T) {
	noEnv := env{getenv: func(string) string { return "" }}
	o, err := benchFlags([]string{"-soak", "60s"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if o.Soak != time.Minute || o.Rate != 200 || o.Events != 12_000 || o.Tenants != 100 || o.Ordered != 20 || o.MaxInFlight != 16 ||
		o.FailRate != 0.05 || o.SlowRate != 0 || o.SlowLatency != time.Second || o.Progress != 10*time.Second || o.Timeout != 11*time.Minute || o.SharedHost {
		t.Fatalf("%+v", o)
	}
	// Whatever is given wins, zeros included.
	o, err = benchFlags([]string{"-soak", "10s", "-rate", "50", "-tenants", "5", "-ordered", "0", "-fail-rate", "0", "-slow-rate", "0.1",
		"-slow-latency", "2s", "-max-in-flight", "4", "-progress", "2s", "-timeout", "1m", "-shared-host", "-retry-schedule", "1s,2s"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if o.Events != 500 || o.Ordered != 0 || o.FailRate != 0 || o.SlowRate != 0.1 || o.SlowLatency != 2*time.Second || o.MaxInFlight != 4 ||
		o.Progress != 2*time.Second || o.Timeout != time.Minute || !o.SharedHost || len(o.RetrySchedule) != 2 || o.RetrySchedule[1] != "2s" {
		t.Fatalf("%+v", o)
	}
	// Fewer tenants than the default ordered ones: all of them are.
	if o, err := benchFlags([]string{"-soak", "3s", "-tenants", "5"}, noEnv); err != nil || o.Ordered != 5 {
		t.Fatalf("%+v, %v", o, err)
	}
	// Outside a soak nothing fails at random and every subscription has
	// max_in_flight 1.
	if o, err := benchFlags([]string{"-events", "10"}, noEnv); err != nil || o.FailRate != 0 || o.Ordered != 0 || o.MaxInFlight != 1 || o.Progress != time.Second {
		t.Fatalf("%+v, %v", o, err)
	}
}

func TestBench_SoakMistakesAreOneLineEach(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-soak", "60s", "-events", "100"}, "-soak produces for its own duration at -rate: give no -events"},
		{[]string{"-soak", "60s", "-duration", "30s", "-rate", "10"}, "give no -duration"},
		{[]string{"-soak", "-5s"}, "cannot be negative"},
		{[]string{"-soak", "60s", "-timeout", "30s"}, "timeout 30s is not longer than the soak 1m0s"},
		{[]string{"-ordered", "101"}, "ordered tenants 101: want 0 to the 100 tenants"},
		{[]string{"-soak", "10s", "-tenants", "5", "-ordered", "6"}, "ordered tenants 6"},
		{[]string{"-fail-rate", "1.5"}, "fail rate 1.5: want a share from 0 to below 1"},
		{[]string{"-slow-rate", "-0.1"}, "slow rate -0.1: want a share from 0 to 1"},
		{[]string{"-slow-latency", "-1s"}, "slow latency cannot be negative"},
		{[]string{"-retry-schedule", "1s,soon"}, "retry schedule"},
		{[]string{"-limits", "50ms"}, "limits 50ms: want 100ms or more for each measurement (0: none)"},
		{[]string{"-limits", "-5s"}, "limits -5s: want 100ms or more"},
		{[]string{"-limits-only", "-limits", "10ms"}, "limits 10ms: want 100ms or more for each measurement"},
		{[]string{"-limits-only", "-events", "100"}, "-limits-only measures the machine and runs no load: give no -events"},
		{[]string{"-limits-only", "-soak", "1m", "-tenants", "5"}, "give no -soak"},
		{[]string{"-limits-only", "-set", "DISPATCH_WORKERS=3"}, "give no -set"},
		{[]string{"-soak", "10s", "-limits", "5s", "-timeout", "20s"}, "timeout 20s is not longer than the limits' 15s and the soak 10s"},
	} {
		code, _, errOut := runCmd(nil, append([]string{"bench"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
}

// A soak that lost an event exits 1 after its report; one that only has
// events still waiting for a retry does not.
func TestBench_SoakThatLostAnEventFails(t *testing.T) {
	var out, errOut bytes.Buffer
	res := loadtest.Result{Soak: &loadtest.SoakResult{Expected: 10, Delivered: 8, Lost: 1, Waiting: 1, BacklogBound: 1000}}
	if code := report(res, &out, &errOut); code != exitError || !strings.Contains(errOut.String(), "events lost (never delivered, and no job holds them): 1") ||
		!strings.Contains(out.String(), "nothing lost NOT MET") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	res.Soak.Lost = 0
	if code := report(res, &out, &errOut); code != exitOK {
		t.Fatalf("exit %d", code)
	}
}

func TestBenchFlags_Limits(t *testing.T) {
	noEnv := env{getenv: func(string) string { return "" }}
	// Beside a run: measured first, and the default timeout grows by the
	// three measurements.
	r, err := benchFlags([]string{"-limits", "5s", "-events", "1000"}, noEnv)
	if err != nil || r.Limits != 5*time.Second || r.limitsOnly || r.Events != 1000 || r.Timeout != 10*time.Minute+15*time.Second {
		t.Fatalf("%+v, %v", r, err)
	}
	if r, err := benchFlags(nil, noEnv); err != nil || r.Limits != 0 || r.limitsOnly {
		t.Fatalf("no flags: %+v, %v", r, err)
	}
	// Alone: 5 s each unless -limits says, on the database given.
	r, err = benchFlags([]string{"-limits-only"}, env{getenv: func(k string) string {
		return map[string]string{"STREAMING_HUB_DATABASE_URL": "postgres://db/x"}[k]
	}})
	if err != nil || !r.limitsOnly || r.Limits != 5*time.Second || r.DatabaseURL != "postgres://db/x" {
		t.Fatalf("%+v, %v", r, err)
	}
	r, err = benchFlags([]string{"-limits-only", "-limits", "2s", "-database", "", "-cpuprofile", "cpu.out"}, noEnv)
	if err != nil || !r.limitsOnly || r.Limits != 2*time.Second || r.DatabaseURL != "" || r.cpuprofile != "cpu.out" {
		t.Fatalf("%+v, %v", r, err)
	}
}

// Alone and without PostgreSQL, -limits-only measures loopback HTTP only,
// prints the machine block and exits 0 without starting a hub.
func TestBench_LimitsOnlyWithoutPostgreSQL(t *testing.T) {
	code, out, errOut := runCmd(nil, "bench", "-limits-only", "-limits", "200ms")
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"measuring the machine's limits for 200ms each: loopback HTTP\n", "\nmachine (", " req/s at 64 concurrent\n",
		"PostgreSQL      not measured"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "bench: 100000 events") {
		t.Errorf("a load ran:\n%s", out)
	}
}

// On PostgreSQL it measures the commits too.
func TestBench_LimitsOnlyOnPostgreSQL(t *testing.T) {
	testkit.Long(t)
	url := testkit.PostgresURL(t)
	code, out, errOut := runCmd(nil, "bench", "-limits-only", "-limits", "200ms", "-database", url)
	if code != exitOK || errOut != "" {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"; PostgreSQL commits ", "/s from 1 client, ", "from 8 connections", "synchronous_commit on"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
}

// -replicas N runs N-1 more hubs as this binary's serve; one (the default)
// runs none.
func TestBenchFlags_Replicas(t *testing.T) {
	noEnv := env{getenv: func(string) string { return "" }}
	r, err := benchFlags(nil, noEnv)
	if err != nil || r.Replicas != 1 || r.ReplicaCommand != nil {
		t.Fatalf("no flags: %+v, %v", r, err)
	}
	r, err = benchFlags([]string{"-replicas", "3", "-database", "postgres://db/x", "-events", "100"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	if r.Replicas != 3 || !slices.Equal(r.ReplicaCommand, []string{self, "serve"}) {
		t.Fatalf("%+v", r)
	}
}

// Replicas need one database they share, and run a load: each mistake is
// one line and a usage error.
func TestBench_ReplicasMistakesAreOneLineEach(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-replicas", "0"}, "replicas 0: want 1 or more"},
		{[]string{"-replicas", "-2", "-database", "postgres://db/x"}, "replicas -2: want 1 or more"},
		{[]string{"-replicas", "2"}, "replicas 2 need PostgreSQL (-database postgres://...): SQLite is one process's database"},
		{[]string{"-replicas", "2", "-database", "sqlite:///tmp/x.db"}, "replicas 2 need PostgreSQL"},
		{[]string{"-replicas", "2", "-database", "postgres://db/x", "-soak", "10s"}, "replicas 2: give no soak, idle or statements"},
		{[]string{"-replicas", "2", "-database", "postgres://db/x", "-statements", "5"}, "give no soak, idle or statements"},
		{[]string{"-limits-only", "-replicas", "2"}, "-limits-only measures the machine and runs no load: give no -replicas"},
		{[]string{"-replicas", "two"}, `invalid value "two" for flag --replicas`},
	} {
		code, _, errOut := runCmd(nil, append([]string{"bench"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || (!strings.Contains(tc.want, "invalid value") && strings.Count(strings.TrimSpace(errOut), "\n") != 0) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
}
