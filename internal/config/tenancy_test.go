package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

func TestLoad_SingleTenantMode(t *testing.T) {
	load := func(extra map[string]string) (config.Config, error) {
		env := authServeEnv()
		for k, v := range extra {
			env[k] = v
		}
		return loadRaw(config.Serve, env)
	}
	cases := []struct {
		env    map[string]string
		served string
	}{
		{nil, ""}, // multi-tenant, as before
		{map[string]string{"MULTI_TENANT_ENABLED": "true"}, ""},
		{map[string]string{"MULTI_TENANT_ENABLED": "false"}, config.DefaultTenantID}, // lib-commons' name, unprefixed
		{map[string]string{"STREAMING_HUB_MULTI_TENANT_ENABLED": "false"}, config.DefaultTenantID},
		{map[string]string{"STREAMING_HUB_TENANT_ID": "acme"}, "acme"},
		{map[string]string{"MULTI_TENANT_ENABLED": "false", "STREAMING_HUB_TENANT_ID": "org:acme-1"}, "org:acme-1"},
	}
	for _, c := range cases {
		got, err := load(c.env)
		if err != nil {
			t.Fatalf("%v: %v", c.env, err)
		}
		if s := got.Tenancy.Served(); s != c.served || got.Tenancy.MultiTenant != (c.served == "") {
			t.Errorf("%v: served %q (multi-tenant %v), want %q", c.env, s, got.Tenancy.MultiTenant, c.served)
		}
	}
	bad := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"MULTI_TENANT_ENABLED": "nope"}, "MULTI_TENANT_ENABLED: must be true or false"},
		{map[string]string{"STREAMING_HUB_TENANT_ID": "a b"}, "STREAMING_HUB_TENANT_ID: contains"},
		{map[string]string{"MULTI_TENANT_ENABLED": "true", "STREAMING_HUB_TENANT_ID": "acme"}, "STREAMING_HUB_TENANT_ID: is set while MULTI_TENANT_ENABLED=true"},
	}
	for _, b := range bad {
		if _, err := load(b.env); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%v: err %v, want %q", b.env, err, b.want)
		}
	}
	if w := config.Unknown([]string{"STREAMING_HUB_TENANT_ID=acme", "STREAMING_HUB_MULTI_TENANT_ENABLED=false",
		"STREAMING_HUB_RECONCILER_ENABLED=true", "STREAMING_HUB_RECONCILER_INTERVAL=60"}); len(w) != 0 {
		t.Errorf("warned as unknown: %v", w)
	}
}

func TestLoad_ReconcilerInterval(t *testing.T) {
	def := config.Defaults(config.Serve).Reconciler
	for value, want := range map[string]time.Duration{"": def.Interval, "60": time.Minute, "90s": 90 * time.Second} {
		env := authServeEnv()
		if value != "" {
			env["STREAMING_HUB_RECONCILER_INTERVAL"] = value
		}
		env["STREAMING_HUB_RECONCILER_ENABLED"] = "false"
		c, err := loadRaw(config.Serve, env)
		if err != nil || c.Reconciler.Interval != want || c.Reconciler.Enabled {
			t.Errorf("RECONCILER_INTERVAL=%q: %+v, %v; want %s, disabled", value, c.Reconciler, err, want)
		}
	}
	for _, value := range []string{"0", "-5", "soon", "-1m"} {
		env := authServeEnv()
		env["STREAMING_HUB_RECONCILER_INTERVAL"] = value
		if _, err := loadRaw(config.Serve, env); err == nil || !strings.Contains(err.Error(), "STREAMING_HUB_RECONCILER_INTERVAL: must be a positive number of seconds") {
			t.Errorf("RECONCILER_INTERVAL=%q: err %v", value, err)
		}
	}
}
