package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/loadtest"
)

func TestBenchFlags_ProfilesAtTheHubsDefaults(t *testing.T) {
	o, _, err := benchFlags([]string{"-tenants", "50", "-rate", "100", "-duration", "30s", "-hung-tenants", "8",
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
	if o, _, err := benchFlags(nil, env{getenv: func(string) string { return "" }}); err != nil || o.Events != 100_000 || o.Tenants != 100 {
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
	} {
		code, _, errOut := runCmd(nil, append([]string{"bench"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
}

func TestBenchFlags_SoakDefaults(t *testing.T) {
	noEnv := env{getenv: func(string) string { return "" }}
	o, _, err := benchFlags([]string{"-soak", "60s"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if o.Soak != time.Minute || o.Rate != 200 || o.Events != 12_000 || o.Tenants != 100 || o.Ordered != 20 || o.MaxInFlight != 16 ||
		o.FailRate != 0.05 || o.SlowRate != 0 || o.SlowLatency != time.Second || o.Progress != 10*time.Second || o.Timeout != 11*time.Minute || o.SharedHost {
		t.Fatalf("%+v", o)
	}
	// Whatever is given wins, zeros included.
	o, _, err = benchFlags([]string{"-soak", "10s", "-rate", "50", "-tenants", "5", "-ordered", "0", "-fail-rate", "0", "-slow-rate", "0.1",
		"-slow-latency", "2s", "-max-in-flight", "4", "-progress", "2s", "-timeout", "1m", "-shared-host", "-retry-schedule", "1s,2s"}, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if o.Events != 500 || o.Ordered != 0 || o.FailRate != 0 || o.SlowRate != 0.1 || o.SlowLatency != 2*time.Second || o.MaxInFlight != 4 ||
		o.Progress != 2*time.Second || o.Timeout != time.Minute || !o.SharedHost || len(o.RetrySchedule) != 2 || o.RetrySchedule[1] != "2s" {
		t.Fatalf("%+v", o)
	}
	// Fewer tenants than the default ordered ones: all of them are.
	if o, _, err := benchFlags([]string{"-soak", "3s", "-tenants", "5"}, noEnv); err != nil || o.Ordered != 5 {
		t.Fatalf("%+v, %v", o, err)
	}
	// Outside a soak nothing fails at random and every subscription has
	// max_in_flight 1.
	if o, _, err := benchFlags([]string{"-events", "10"}, noEnv); err != nil || o.FailRate != 0 || o.Ordered != 0 || o.MaxInFlight != 1 || o.Progress != time.Second {
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
