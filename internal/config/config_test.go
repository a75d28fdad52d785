package config

import (
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

var kek = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

func serveEnv() map[string]string {
	return map[string]string{
		"STREAMING_HUB_DATABASE_URL":  "postgres://hub@db/hub",
		"STREAMING_HUB_KAFKA_BROKERS": "k1:9092, k2:9092",
		"STREAMING_HUB_KEK":           kek,
		"STREAMING_HUB_ADMIN_TOKEN":   "an-admin-token-long-enough",
	}
}

func TestLoad_DevDefaultsNeedNoInfrastructure(t *testing.T) {
	c, err := Load(Dev, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.DatabaseURL != "sqlite://./streaming-hub.db" || !c.AllowPrivateSinks || c.LogFormat != "text" ||
		c.Role != RoleAll || c.HTTPAddr != "127.0.0.1:8080" || c.DevKafkaAddr != "127.0.0.1:9092" || c.Ingest.Group != "streaming-hub.local" {
		t.Fatalf("dev defaults: %+v", c)
	}
	if c.Dispatch.Workers != 8 || c.Dispatch.ClaimBatch != 256 || c.Dispatch.IdleInterval != time.Second ||
		c.Dispatch.Lease != 5*time.Second || c.Dispatch.MaxInFlight != 1024 || c.Dispatch.MaxPerDestination != 64 || c.DeliveryTimeout != 15*time.Second || c.Dispatch.PoisonThreshold != 5 ||
		!c.Autodisable.Enabled || c.Autodisable.FailureWindow != 120*time.Hour || c.Autodisable.FailureSpread != 12*time.Hour ||
		c.Pull.Rate != 100 || c.Pull.Burst != 200 || c.Housekeeping.DLQRetention != 168*time.Hour || c.ShutdownTimeout != 30*time.Second {
		t.Fatalf("documented defaults (docs/configuration.md): %+v", c)
	}
	if c.Breaker.Failures != 5 || c.Breaker.OpenFor != 30*time.Second || c.Breaker.MaxOpen != 10*time.Minute ||
		c.Ingest.SessionTimeout != 15*time.Second || c.Ingest.InstanceID != "" || c.Ingest.MaxRecordBytes != 1<<20 || c.Ingest.TopicsRegex != hub.DefaultTopicsRegex {
		t.Fatalf("breaker and Kafka defaults: %+v", c)
	}
	if c.Housekeeping.InboxRetention != 168*time.Hour || c.Housekeeping.JobRetention != 168*time.Hour || c.Housekeeping.Interval != time.Minute ||
		c.Housekeeping.PartitionInterval != 6*time.Hour || c.Housekeeping.PartitionFutureWeeks != 4 {
		t.Fatalf("retention defaults: %+v", c)
	}
}

func TestLoad_DevListensOnLoopbackUnlessTold(t *testing.T) {
	if c, _ := Load(Dev, env(map[string]string{"STREAMING_HUB_HTTP_ADDR": ":9999"})); c.HTTPAddr != ":9999" {
		t.Fatalf("dev with STREAMING_HUB_HTTP_ADDR=:9999 listens on %q", c.HTTPAddr)
	}
}

func TestLoad_Serve(t *testing.T) {
	c, err := Load(Serve, env(serveEnv()))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Ingest.Brokers, "|") != "k1:9092|k2:9092" || len(c.KEK) != 32 || c.AllowPrivateSinks || c.LogFormat != "json" || c.HTTPAddr != ":8080" {
		t.Fatalf("serve: %+v", c)
	}
	e := serveEnv()
	e["STREAMING_HUB_ENV"] = "prod"
	if c, _ := Load(Serve, env(e)); c.Ingest.Group != "streaming-hub.prod" {
		t.Fatalf("group = %q", c.Ingest.Group)
	}
}

func TestLoad_BadValuesNameTheVariable(t *testing.T) {
	cases := []struct {
		mode  Mode
		set   map[string]string
		unset []string
		want  string
	}{
		{Dev, map[string]string{"STREAMING_HUB_DISPATCH_WORKERS": "many"}, nil, `STREAMING_HUB_DISPATCH_WORKERS: must be a positive integer, got "many"`},
		{Dev, map[string]string{"STREAMING_HUB_DISPATCH_WORKERS": "0"}, nil, `STREAMING_HUB_DISPATCH_WORKERS: must be a positive integer, got "0"`},
		{Dev, map[string]string{"STREAMING_HUB_DISPATCH_LEASE": "60"}, nil, `STREAMING_HUB_DISPATCH_LEASE: must be a positive Go duration`},
		{Dev, map[string]string{"STREAMING_HUB_AUTODISABLE_ENABLED": "yes please"}, nil, `STREAMING_HUB_AUTODISABLE_ENABLED: must be true or false`},
		{Dev, map[string]string{"STREAMING_HUB_ROLE": "both"}, nil, `STREAMING_HUB_ROLE: must be one of all, ingest, delivery, got "both"`},
		{Dev, map[string]string{"STREAMING_HUB_LOG_LEVEL": "loud"}, nil, `STREAMING_HUB_LOG_LEVEL: must be debug, info, warn or error`},
		{Dev, map[string]string{"STREAMING_HUB_PULL_RATE": "-1"}, nil, `STREAMING_HUB_PULL_RATE: must be a positive number`},
		{Dev, map[string]string{"STREAMING_HUB_KAFKA_TOPICS_REGEX": "(("}, nil, `STREAMING_HUB_KAFKA_TOPICS_REGEX: not a valid regular expression`},
		{Dev, map[string]string{"STREAMING_HUB_DATABASE_URL": "mysql://x"}, nil, `STREAMING_HUB_DATABASE_URL: must start with postgres:// or sqlite://`},
		{Dev, map[string]string{"STREAMING_HUB_KEK": "c2hvcnQ="}, nil, `STREAMING_HUB_KEK: must decode to exactly 32 bytes, got 5`},
		{Dev, map[string]string{"STREAMING_HUB_KEK": "not base64!"}, nil, `STREAMING_HUB_KEK: must be base64`},
		{Serve, nil, []string{"STREAMING_HUB_KEK"}, `STREAMING_HUB_KEK: required in serve mode`},
		{Serve, nil, []string{"STREAMING_HUB_DATABASE_URL"}, `STREAMING_HUB_DATABASE_URL: required`},
		{Serve, nil, []string{"STREAMING_HUB_KAFKA_BROKERS"}, `STREAMING_HUB_KAFKA_BROKERS: required in serve mode for role all`},
		{Serve, nil, []string{"STREAMING_HUB_ADMIN_TOKEN"}, `STREAMING_HUB_ADMIN_TOKEN: required in serve mode`},
		{Serve, map[string]string{"STREAMING_HUB_ADMIN_TOKEN": "short"}, nil, `STREAMING_HUB_ADMIN_TOKEN: must be at least 16 characters`},
		{Serve, map[string]string{"STREAMING_HUB_DATABASE_URL": "sqlite:///tmp/x.db"}, nil, `STREAMING_HUB_DATABASE_URL: serve needs PostgreSQL`},
		{Dev, map[string]string{"STREAMING_HUB_CONSOLE_FRAME_ANCESTORS": "https://a.example; script-src *"}, nil, `STREAMING_HUB_CONSOLE_FRAME_ANCESTORS: "https://a.example;" is not a source`},
		{Dev, map[string]string{"STREAMING_HUB_CONSOLE_FRAME_ANCESTORS": "'none' https://a.example"}, nil, `STREAMING_HUB_CONSOLE_FRAME_ANCESTORS: 'none' must stand alone`},
		{Dev, map[string]string{"STREAMING_HUB_CONSOLE_FRAME_ANCESTORS": "javascript:x"}, nil, `STREAMING_HUB_CONSOLE_FRAME_ANCESTORS: "javascript:x" is not a source`},
		{Dev, map[string]string{"STREAMING_HUB_DATABASE_MAX_CONNS": "1"}, nil, `STREAMING_HUB_DATABASE_MAX_CONNS: must be an integer of at least 2, got "1"`},
		{Dev, map[string]string{"STREAMING_HUB_DATABASE_MAX_CONNS": "lots"}, nil, `STREAMING_HUB_DATABASE_MAX_CONNS: must be an integer of at least 2, got "lots"`},
		{Serve, map[string]string{"STREAMING_HUB_DATABASE_URL": "postgres://h/db?pool_max_conns=1"}, nil, `STREAMING_HUB_DATABASE_URL: pool_max_conns must be at least 2`},
	}
	for _, c := range cases {
		e := serveEnv()
		if c.mode == Dev {
			e = map[string]string{}
		}
		for k, v := range c.set {
			e[k] = v
		}
		for _, k := range c.unset {
			delete(e, k)
		}
		_, err := Load(c.mode, env(e))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s %v: error %v, want prefix %q", c.mode, c.set, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error spans lines: %q", err)
		}
	}
}

// The pool's size follows the role unless DATABASE_MAX_CONNS says
// (docs/performance.md).
func TestLoad_PoolSizeByRole(t *testing.T) {
	for role, want := range map[string]int{"all": 16, "ingest": 8, "delivery": 16} {
		e := serveEnv()
		e["STREAMING_HUB_ROLE"] = role
		c, err := Load(Serve, env(e))
		if err != nil || c.DatabaseMaxConns != want {
			t.Errorf("role %s: pool %d, %v; want %d", role, c.DatabaseMaxConns, err, want)
		}
	}
	e := serveEnv()
	e["STREAMING_HUB_DATABASE_MAX_CONNS"] = "40"
	if c, err := Load(Serve, env(e)); err != nil || c.DatabaseMaxConns != 40 {
		t.Errorf("DATABASE_MAX_CONNS=40: pool %d, %v", c.DatabaseMaxConns, err)
	}
}

func TestLoad_DeliveryRoleNeedsNoKafka(t *testing.T) {
	e := serveEnv()
	delete(e, "STREAMING_HUB_KAFKA_BROKERS")
	e["STREAMING_HUB_ROLE"] = "delivery"
	if _, err := Load(Serve, env(e)); err != nil {
		t.Fatal(err)
	}
}

func TestLoad_SecretValuesAreNeverEchoed(t *testing.T) {
	secret := "dGhpcyBpcyBhIHNlY3JldCBidXQgdG9vIHNob3J0"
	_, err := Load(Dev, env(map[string]string{"STREAMING_HUB_KEK": secret}))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("error %v", err)
	}
}

func TestLoad_UnsetVariablesKeepTheDefaults(t *testing.T) {
	for _, mode := range []Mode{Dev, Serve} {
		e := map[string]string{}
		if mode == Serve {
			e = serveEnv()
		}
		c, err := Load(mode, env(e))
		if err != nil {
			t.Fatal(err)
		}
		want := Defaults(mode)
		want.Ingest.Brokers, want.DatabaseURL, want.KEK, want.AdminToken = c.Ingest.Brokers, c.DatabaseURL, c.KEK, c.AdminToken
		if !reflect.DeepEqual(c, want) {
			t.Errorf("%s: Load = %+v\nwant Defaults = %+v", mode, c, want)
		}
	}
}

func TestLoad_VariablesOverrideTheDefaults(t *testing.T) {
	c, err := Load(Dev, env(map[string]string{
		"STREAMING_HUB_ENV":                       "staging",
		"STREAMING_HUB_DISPATCH_IDLE_INTERVAL_MS": "40",
		"STREAMING_HUB_BREAKER_OPEN":              "1m",
		"STREAMING_HUB_AUTODISABLE_ENABLED":       "false",
		"STREAMING_HUB_PULL_BURST":                "7",
		"STREAMING_HUB_KAFKA_SESSION_TIMEOUT":     "10s",
		"STREAMING_HUB_MAX_RECORD_BYTES":          "2048",
		"STREAMING_HUB_HOUSEKEEPING_INTERVAL":     "5m",
		"STREAMING_HUB_PARTITION_INTERVAL":        "1h",
		"STREAMING_HUB_PARTITION_FUTURE_WEEKS":    "8",
		"STREAMING_HUB_INGEST_STALL_AFTER":        "3s",
		"STREAMING_HUB_KAFKA_INSTANCE_ID":         "hub-ingest-7d9c8b6f5-x2k4q",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Ingest.Group != "streaming-hub.staging" || c.Dispatch.IdleInterval != 40*time.Millisecond ||
		c.Breaker.OpenFor != time.Minute || c.Autodisable.Enabled || c.Pull.Burst != 7 ||
		c.Ingest.SessionTimeout != 10*time.Second || c.Ingest.MaxRecordBytes != 2048 || c.Housekeeping.Interval != 5*time.Minute ||
		c.Ingest.StallAfter != 3*time.Second || c.Ingest.InstanceID != "hub-ingest-7d9c8b6f5-x2k4q" ||
		c.Housekeeping.PartitionInterval != time.Hour || c.Housekeeping.PartitionFutureWeeks != 8 {
		t.Fatalf("overrides not applied: %+v", c)
	}
}

func TestLoad_EveryBadVariableAtOnceOneLineEach(t *testing.T) {
	_, err := Load(Serve, env(map[string]string{
		"STREAMING_HUB_DISPATCH_WORKERS":       "eight",
		"STREAMING_HUB_DELIVERY_TIMEOUT":       "soon",
		"STREAMING_HUB_HTTP_ADDR":              "8080",
		"STREAMING_HUB_LOG_LEVEL":              "loud",
		"STREAMING_HUB_PARTITION_INTERVAL":     "often",
		"STREAMING_HUB_PARTITION_FUTURE_WEEKS": "0",
	}))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{"DISPATCH_WORKERS", "DELIVERY_TIMEOUT", "HTTP_ADDR", "LOG_LEVEL", "PARTITION_INTERVAL", "PARTITION_FUTURE_WEEKS", "DATABASE_URL", "KAFKA_BROKERS", "KEK", "ADMIN_TOKEN"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d (one per bad or missing variable):\n%s", len(lines), len(want), err)
	}
	for _, name := range want {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "STREAMING_HUB_"+name+": ") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s named on %d lines:\n%s", name, n, err)
		}
	}
	var cerr *Error
	if !errors.As(err, &cerr) {
		t.Fatal("errors.As finds no *Error")
	}
}

func TestLoad_HTTPAddrIsCheckedBeforeAnythingStarts(t *testing.T) {
	for _, bad := range []string{"8080", "localhost", ":http", ":99999", "a:b:c"} {
		if _, err := Load(Dev, env(map[string]string{"STREAMING_HUB_HTTP_ADDR": bad})); err == nil || !strings.Contains(err.Error(), "STREAMING_HUB_HTTP_ADDR: ") {
			t.Errorf("HTTP_ADDR %q: %v", bad, err)
		}
	}
	for _, good := range []string{":8080", "127.0.0.1:0", "[::1]:8080"} {
		if _, err := Load(Dev, env(map[string]string{"STREAMING_HUB_HTTP_ADDR": good})); err != nil {
			t.Errorf("HTTP_ADDR %q: %v", good, err)
		}
	}
}

func TestUnknown_WarnsWithTheClosestName(t *testing.T) {
	got := Unknown([]string{
		"STREAMING_HUB_DISPATCH_WORKER=8", "STREAMING_HUB_DISPATCH_WORKERS=8", "PATH=/bin",
		"STREAMING_HUB_KEK=x", "STREAMING_HUB_TEST_POSTGRES_URL=x", "STREAMING_HUB_ZZZZZZZZZZZZZZZZZZZZZZZ=1",
	})
	want := []string{
		"STREAMING_HUB_DISPATCH_WORKER: unknown; did you mean STREAMING_HUB_DISPATCH_WORKERS?",
		"STREAMING_HUB_ZZZZZZZZZZZZZZZZZZZZZZZ: unknown",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// STREAMING_HUB_KAFKA_INSTANCE_ID turns on static group membership
// (docs/performance.md); it follows Kafka's rule for group.instance.id, and a
// bad one is one line naming the variable.
func TestLoad_KafkaInstanceID(t *testing.T) {
	for _, good := range []string{"h", "streaming-hub-ingest-7d9c8b6f5-x2k4q", "hub_1.eu-west-1", "...", strings.Repeat("a", 249)} {
		e := serveEnv()
		e["STREAMING_HUB_KAFKA_INSTANCE_ID"] = good
		c, err := Load(Serve, env(e))
		if err != nil || c.Ingest.InstanceID != good {
			t.Errorf("instance id %q: got %q, %v", good, c.Ingest.InstanceID, err)
		}
	}
	for bad, want := range map[string]string{
		"hub/1":                  `must be ASCII letters, digits, '.', '_' and '-' only (Kafka's group.instance.id), got "hub/1"`,
		"hub 1":                  `must be ASCII letters, digits, '.', '_' and '-' only`,
		"hub:1":                  `must be ASCII letters, digits, '.', '_' and '-' only`,
		"hüb":                    `must be ASCII letters, digits, '.', '_' and '-' only`,
		"hub\n1":                 `must be ASCII letters, digits, '.', '_' and '-' only`,
		".":                      `must not be "."`,
		"..":                     `must not be ".."`,
		strings.Repeat("a", 250): `must be at most 249 characters (Kafka's group.instance.id), got 250`,
	} {
		_, err := Load(Dev, env(map[string]string{"STREAMING_HUB_KAFKA_INSTANCE_ID": bad}))
		if err == nil || !strings.HasPrefix(err.Error(), "STREAMING_HUB_KAFKA_INSTANCE_ID: "+want) {
			t.Errorf("instance id %q: error %v, want %q", bad, err, want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("instance id %q: error spans lines: %q", bad, err)
		}
	}
	// Unset and blank are no static membership, and the name is known.
	for _, unset := range []string{"", "  "} {
		if c, err := Load(Dev, env(map[string]string{"STREAMING_HUB_KAFKA_INSTANCE_ID": unset})); err != nil || c.Ingest.InstanceID != "" {
			t.Errorf("instance id %q: got %q, %v", unset, c.Ingest.InstanceID, err)
		}
	}
	if w := Unknown([]string{"STREAMING_HUB_KAFKA_INSTANCE_ID=hub-0"}); len(w) != 0 {
		t.Errorf("KAFKA_INSTANCE_ID is reported unknown: %v", w)
	}
}

func TestLoad_ConsoleFrameAncestors(t *testing.T) {
	c, err := Load(Dev, env(nil))
	if err != nil || c.Console.FrameAncestors != "'none'" || c.Console.IdleTimeout != 12*time.Hour {
		t.Fatalf("defaults: %+v, %v", c.Console, err)
	}
	c, err = Load(Dev, env(map[string]string{"STREAMING_HUB_CONSOLE_FRAME_ANCESTORS": "'self' https://app.example.com https://*.example.org"}))
	if err != nil || c.Console.FrameAncestors != "'self' https://app.example.com https://*.example.org" {
		t.Fatalf("origins: %+v, %v", c.Console, err)
	}
}
