package main

import (
	"strings"
	"testing"
	"time"
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
