package config_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// chartBase is a serve environment without the variables a test sets.
func chartBase() map[string]string {
	return map[string]string{
		"STREAMING_HUB_DATABASE_URL":  "postgres://hub@db/hub",
		"STREAMING_HUB_KAFKA_BROKERS": "k1:9092",
		"STREAMING_HUB_KEK":           kek,
		"STREAMING_HUB_ADMIN_TOKEN":   "an-admin-token-long-enough",
	}
}

func loadWith(t *testing.T, env map[string]string) (config.Config, []string, error) {
	t.Helper()
	get := func(k string) string { return env[k] }
	c, err := config.Load(config.Serve, get)
	return c, config.Warnings(config.Serve, get), err
}

// Each name of Lerian's chart that means one of the hub's is read with that
// meaning; with both set, the hub's own wins and one warning names both,
// showing neither value.
func TestLoad_ChartNamesYieldToTheHubsOwn(t *testing.T) {
	cases := []struct {
		own, chart, value, other string
		got                      func(config.Config) string
	}{
		{"HTTP_ADDR", "HTTP_LISTEN_ADDR", "127.0.0.1:9000", ":8081", func(c config.Config) string { return c.HTTPAddr }},
		{"DATABASE_URL", "POSTGRES_DSN", "postgres://hub:secret-pw@db/hub", "postgres://x:other-pw@db2/hub", func(c config.Config) string { return c.DatabaseURL }},
		{"DATABASE_MAX_CONNS", "POSTGRES_MAX_OPEN_CONNS", "25", "10", func(c config.Config) string { return strconv.Itoa(c.DatabaseMaxConns) }},
		{"PARTITION_INTERVAL", "PARTITION_CRON_INTERVAL", "3h0m0s", "1h0m0s", func(c config.Config) string { return c.Housekeeping.PartitionInterval.String() }},
		{"PARTITION_FUTURE_WEEKS", "PARTITION_FUTURE_BUFFER_WEEKS", "6", "2", func(c config.Config) string { return strconv.Itoa(c.Housekeeping.PartitionFutureWeeks) }},
	}
	for _, c := range cases {
		t.Run(c.chart, func(t *testing.T) {
			env := chartBase()
			delete(env, "STREAMING_HUB_"+c.own)
			env["STREAMING_HUB_"+c.chart] = c.value
			cfg, warns, err := loadWith(t, env)
			if err != nil || c.got(cfg) != c.value || len(warns) != 0 {
				t.Fatalf("%s alone: %q, warnings %q, err %v", c.chart, c.got(cfg), warns, err)
			}
			env["STREAMING_HUB_"+c.own] = c.other
			cfg, warns, err = loadWith(t, env)
			if err != nil || c.got(cfg) != c.other {
				t.Fatalf("both: %q (want the hub's own %q), err %v", c.got(cfg), c.other, err)
			}
			want := "STREAMING_HUB_" + c.own + " and STREAMING_HUB_" + c.chart + " are both set, to different values: STREAMING_HUB_" + c.own + " is used"
			if len(warns) != 1 || warns[0] != want {
				t.Fatalf("warnings %q, want %q", warns, want)
			}
			// The same value twice says nothing.
			env["STREAMING_HUB_"+c.own] = c.value
			if _, warns, err := loadWith(t, env); err != nil || len(warns) != 0 {
				t.Fatalf("both equal: warnings %q, err %v", warns, err)
			}
		})
	}
	// A bad value under the chart's name is reported under that name.
	env := chartBase()
	env["STREAMING_HUB_POSTGRES_MAX_OPEN_CONNS"] = "one"
	if _, _, err := loadWith(t, env); err == nil || !strings.HasPrefix(err.Error(), "STREAMING_HUB_POSTGRES_MAX_OPEN_CONNS: ") {
		t.Fatalf("bad chart value: %v", err)
	}
}

// The chart's own settings: defaults keep the hub's behaviour before them;
// the chart's values are read; bad ones name the variable.
func TestLoad_ChartSettings(t *testing.T) {
	c, _, err := loadWith(t, chartBase())
	if err != nil {
		t.Fatal(err)
	}
	d := config.Defaults(config.Serve)
	hk := c.Housekeeping
	if !hk.PartitionRetention || hk.PartitionRetentionHorizon != 0 || !c.MetricsEnabled || c.PreStopDrain != 0 ||
		c.DatabaseMinConns != 0 || c.DatabaseConnMaxLifetime != d.DatabaseConnMaxLifetime ||
		hk.DLQPruneInterval != d.Housekeeping.Interval || hk.IdempotencyReapInterval != d.Housekeeping.Interval {
		t.Fatalf("defaults: %+v", c)
	}
	env := chartBase()
	for k, v := range map[string]string{
		"POSTGRES_MAX_OPEN_CONNS": "25", "POSTGRES_MAX_IDLE_CONNS": "12", "POSTGRES_CONN_MAX_LIFETIME": "30m",
		"PARTITION_RETENTION_ENABLED": "false", "PARTITION_RETENTION_HORIZON": "0",
		"DLQ_PRUNE_INTERVAL": "1h", "IDEMPOTENCY_REAP_INTERVAL": "5m",
		"METRICS_ENABLED": "false", "PRE_STOP_DRAIN_TIMEOUT": "5s",
	} {
		env["STREAMING_HUB_"+k] = v
	}
	c, warns, err := loadWith(t, env)
	if err != nil || len(warns) != 0 {
		t.Fatalf("chart values: %v %q", err, warns)
	}
	hk = c.Housekeeping
	if c.DatabaseMaxConns != 25 || c.DatabaseMinConns != 12 || c.DatabaseConnMaxLifetime != 30*time.Minute ||
		hk.PartitionRetention || hk.PartitionRetentionHorizon != 0 || hk.DLQPruneInterval != time.Hour ||
		hk.IdempotencyReapInterval != 5*time.Minute || c.MetricsEnabled || c.PreStopDrain != 5*time.Second {
		t.Fatalf("chart values read as %+v", c)
	}
	env["STREAMING_HUB_PARTITION_RETENTION_HORIZON"] = "2160h"
	if c, _, err := loadWith(t, env); err != nil || c.Housekeeping.PartitionRetentionHorizon != 2160*time.Hour {
		t.Fatalf("horizon: %v %v", c.Housekeeping.PartitionRetentionHorizon, err)
	}
	for name, bad := range map[string]string{
		"POSTGRES_MAX_IDLE_CONNS":     "26",
		"PARTITION_RETENTION_HORIZON": "-1h",
		"PRE_STOP_DRAIN_TIMEOUT":      "soon",
		"METRICS_ENABLED":             "maybe",
		"DLQ_PRUNE_INTERVAL":          "0",
	} {
		e := chartBase()
		e["STREAMING_HUB_POSTGRES_MAX_OPEN_CONNS"] = "25"
		e["STREAMING_HUB_"+name] = bad
		if _, _, err := loadWith(t, e); err == nil || !strings.HasPrefix(err.Error(), "STREAMING_HUB_"+name+": ") {
			t.Errorf("%s=%s: %v", name, bad, err)
		}
	}
}

// The KEK by reference: env (the variable KEK_REF names), file, or
// secretsmanager (fetched later, so Load does not require it). Errors name
// the variable and the source and never show the key.
func TestLoad_KEKByReference(t *testing.T) {
	key := []byte("abcdefghijklmnopqrstuvwxyz012345")
	b64 := base64.StdEncoding.EncodeToString(key)
	env := chartBase()
	delete(env, "STREAMING_HUB_KEK")
	env["STREAMING_HUB_KEK_REF"] = "STREAMING_HUB_DEV_KEK"
	env["STREAMING_HUB_DEV_KEK"] = b64
	c, _, err := loadWith(t, env)
	if err != nil || string(c.KEK) != string(key) || c.KEKSource.Source != "env" {
		t.Fatalf("env by ref: %v", err)
	}
	// rewrap reads the same.
	k, err := config.LoadKeys(func(n string) string { return env[n] })
	if err != nil || string(k.KEK) != string(key) {
		t.Fatalf("LoadKeys env by ref: %v", err)
	}

	path := filepath.Join(t.TempDir(), "kek")
	if err := os.WriteFile(path, []byte(b64+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileEnv := chartBase()
	delete(fileEnv, "STREAMING_HUB_KEK")
	fileEnv["STREAMING_HUB_KEK_SOURCE"] = "file"
	fileEnv["STREAMING_HUB_KEK_REF"] = path
	if c, _, err := loadWith(t, fileEnv); err != nil || string(c.KEK) != string(key) {
		t.Fatalf("file: %v", err)
	}

	smEnv := chartBase()
	delete(smEnv, "STREAMING_HUB_KEK")
	smEnv["STREAMING_HUB_KEK_SOURCE"] = "secretsmanager"
	smEnv["STREAMING_HUB_KEK_REF"] = "prod/streaming-hub/kek"
	c, _, err = loadWith(t, smEnv)
	if err != nil || c.KEK != nil || !c.KEKSource.Fetched() || c.KEKSource.Ref != "prod/streaming-hub/kek" {
		t.Fatalf("secretsmanager: %v %+v", err, c.KEKSource)
	}

	short := base64.StdEncoding.EncodeToString([]byte("too-short"))
	bad := []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"STREAMING_HUB_KEK_REF": "STREAMING_HUB_DEV_KEK"},
			"STREAMING_HUB_KEK_REF: names STREAMING_HUB_DEV_KEK, which is unset or empty (STREAMING_HUB_KEK_SOURCE=env)"},
		{map[string]string{"STREAMING_HUB_KEK_REF": "STREAMING_HUB_DEV_KEK", "STREAMING_HUB_DEV_KEK": short},
			"STREAMING_HUB_KEK_REF: STREAMING_HUB_DEV_KEK (named by STREAMING_HUB_KEK_REF): must decode to exactly 32 bytes, got 9 (`openssl rand -base64 32` makes one)"},
		{map[string]string{"STREAMING_HUB_KEK_REF": "STREAMING_HUB_DEV_KEK", "STREAMING_HUB_DEV_KEK": b64, "STREAMING_HUB_KEK": b64},
			"STREAMING_HUB_KEK: and STREAMING_HUB_KEK_SOURCE/STREAMING_HUB_KEK_REF (STREAMING_HUB_DEV_KEK (named by STREAMING_HUB_KEK_REF)) both give the KEK: set only one of them"},
		{map[string]string{"STREAMING_HUB_KEK_SOURCE": "file"},
			"STREAMING_HUB_KEK_REF: required with STREAMING_HUB_KEK_SOURCE=file (the file's path)"},
		{map[string]string{"STREAMING_HUB_KEK_SOURCE": "file", "STREAMING_HUB_KEK_REF": path + ".missing"},
			`STREAMING_HUB_KEK_REF: cannot read the file "` + path + `.missing" (STREAMING_HUB_KEK_SOURCE=file, STREAMING_HUB_KEK_REF): no such file or directory`},
		{map[string]string{"STREAMING_HUB_KEK_SOURCE": "secretsmanager"},
			"STREAMING_HUB_KEK_REF: required with STREAMING_HUB_KEK_SOURCE=secretsmanager (the secret's name or ARN)"},
		{map[string]string{"STREAMING_HUB_KEK_SOURCE": "vault"},
			`STREAMING_HUB_KEK_SOURCE: must be one of env, file, secretsmanager, got "vault"`},
	}
	for _, b := range bad {
		e := chartBase()
		delete(e, "STREAMING_HUB_KEK")
		for k, v := range b.set {
			e[k] = v
		}
		_, _, err := loadWith(t, e)
		if err == nil || err.Error() != b.want {
			t.Errorf("%v:\n got %v\nwant %s", b.set, err, b.want)
		}
		if err != nil && (strings.Contains(err.Error(), b64) || strings.Contains(err.Error(), short)) {
			t.Errorf("the error shows the key: %v", err)
		}
	}
}

// The variable KEK_REF names is read, so it is not warned about as
// unknown; without the reference it is.
func TestUnknown_TheKEKReferenceIsKnown(t *testing.T) {
	environ := []string{"STREAMING_HUB_KEK_REF=STREAMING_HUB_DEV_KEK", "STREAMING_HUB_DEV_KEK=x"}
	if got := config.Unknown(environ); len(got) != 0 {
		t.Errorf("Unknown = %q", got)
	}
	if got := config.Unknown(environ[1:]); len(got) != 1 || !strings.HasPrefix(got[0], "STREAMING_HUB_DEV_KEK: unknown") {
		t.Errorf("without KEK_REF: Unknown = %q", got)
	}
}

// With the access manager on, serve needs no admin token: operators come
// with JWTs. Without it, the token is still required.
func TestLoad_NoAdminTokenWithTheAccessManager(t *testing.T) {
	env := chartBase()
	delete(env, "STREAMING_HUB_ADMIN_TOKEN")
	if _, _, err := loadWith(t, env); err == nil || !strings.HasPrefix(err.Error(), "STREAMING_HUB_ADMIN_TOKEN: required in serve mode") {
		t.Fatalf("without the access manager: %v", err)
	}
	env["PLUGIN_AUTH_ENABLED"] = "true"
	env["PLUGIN_AUTH_ADDRESS"] = "http://plugin-access-manager-auth:4000"
	c, _, err := loadWith(t, env)
	if err != nil || c.AdminToken != "" {
		t.Fatalf("with the access manager: %v", err)
	}
	env["STREAMING_HUB_ADMIN_TOKEN"] = "short"
	if _, _, err := loadWith(t, env); err == nil || !strings.Contains(err.Error(), "ADMIN_TOKEN: must be at least 16") {
		t.Fatalf("a short token is still refused: %v", err)
	}
}
