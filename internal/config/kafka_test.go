package config_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const kek = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes

// production is a serve configuration that ENV=production accepts: TLS
// to Kafka, PostgreSQL with sslmode=verify-full.
func production() map[string]string {
	return map[string]string{
		"STREAMING_HUB_ENV":               "production",
		"STREAMING_HUB_AUTH_REQUIRED":     "false", // docs/lerian-platform.md: no access manager here
		"STREAMING_HUB_DATABASE_URL":      "postgres://hub:pw@db/hub?sslmode=verify-full",
		"STREAMING_HUB_KAFKA_BROKERS":     "k1:9093",
		"STREAMING_HUB_KAFKA_TLS_ENABLED": "true",
		"STREAMING_HUB_KEK":               kek,
		"STREAMING_HUB_ADMIN_TOKEN":       "an-admin-token-long-enough",
	}
}

func load(mode config.Mode, base map[string]string, set map[string]string, unset ...string) (config.Config, error) {
	e := map[string]string{}
	for k, v := range base {
		e[k] = v
	}
	for k, v := range set {
		e["STREAMING_HUB_"+k] = v
	}
	for _, k := range unset {
		delete(e, "STREAMING_HUB_"+k)
	}
	return config.Load(mode, func(k string) string { return e[k] })
}

func TestLoad_ProductionAcceptsTLSEverywhere(t *testing.T) {
	for _, mode := range []string{"require", "verify-ca", "verify-full"} {
		if _, err := load(config.Serve, production(), map[string]string{"DATABASE_URL": "postgres://db/hub?sslmode=" + mode}); err != nil {
			t.Errorf("sslmode=%s: %v", mode, err)
		}
	}
}

// Every refusal of docs/security.md is one line naming the variable, and
// the variable that allows it lets the start go on.
func TestLoad_FailsClosed(t *testing.T) {
	cases := []struct {
		name  string
		mode  config.Mode
		base  map[string]string
		set   map[string]string
		unset []string
		want  string // the one line
		allow string // the variable that, set to true, accepts it ("" when nothing does)
	}{
		{
			name: "production refuses plaintext Kafka", mode: config.Serve, base: production(),
			unset: []string{"KAFKA_TLS_ENABLED"},
			want:  "STREAMING_HUB_KAFKA_TLS_ENABLED: ENV=production refuses plaintext Kafka: set it to true (or STREAMING_HUB_ALLOW_INSECURE_KAFKA=true to accept plaintext)",
			allow: "ALLOW_INSECURE_KAFKA",
		},
		{
			name: "production refuses KAFKA_TLS_ENABLED=false", mode: config.Serve, base: production(),
			set:   map[string]string{"KAFKA_TLS_ENABLED": "false"},
			want:  "STREAMING_HUB_KAFKA_TLS_ENABLED: ENV=production refuses plaintext Kafka",
			allow: "ALLOW_INSECURE_KAFKA",
		},
		{
			name: "production refuses PostgreSQL without sslmode", mode: config.Serve, base: production(),
			set:   map[string]string{"DATABASE_URL": "postgres://hub:pw@db/hub"},
			want:  "STREAMING_HUB_DATABASE_URL: ENV=production needs sslmode=require, verify-ca or verify-full, got sslmode unset (libpq's prefer) (or set STREAMING_HUB_ALLOW_INSECURE_DB_TLS=true)",
			allow: "ALLOW_INSECURE_DB_TLS",
		},
		{
			name: "production refuses sslmode=disable", mode: config.Serve, base: production(),
			set:   map[string]string{"DATABASE_URL": "postgres://hub:pw@db/hub?sslmode=disable"},
			want:  "STREAMING_HUB_DATABASE_URL: ENV=production needs sslmode=require, verify-ca or verify-full, got sslmode disable",
			allow: "ALLOW_INSECURE_DB_TLS",
		},
		{
			name: "production refuses sslmode=prefer under the chart's name", mode: config.Serve, base: production(),
			set:   map[string]string{"POSTGRES_DSN": "postgres://hub:pw@db/hub?sslmode=prefer"},
			unset: []string{"DATABASE_URL"},
			want:  "STREAMING_HUB_POSTGRES_DSN: ENV=production needs sslmode=require, verify-ca or verify-full, got sslmode prefer",
			allow: "ALLOW_INSECURE_DB_TLS",
		},
		{
			name: "SASL PLAIN without TLS, outside production", mode: config.Serve, base: serveBase(),
			set:   map[string]string{"KAFKA_SASL_MECHANISM": "PLAIN", "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "p"},
			want:  "STREAMING_HUB_KAFKA_SASL_MECHANISM: PLAIN without TLS sends the password in clear",
			allow: "ALLOW_INSECURE_KAFKA",
		},
		{
			name: "SASL PLAIN without TLS, in dev", mode: config.Dev, base: nil,
			set:   map[string]string{"KAFKA_SCRAM_MECHANISM": "plain", "KAFKA_SCRAM_USERNAME": "u", "KAFKA_SCRAM_PASSWORD": "p"},
			want:  "STREAMING_HUB_KAFKA_SCRAM_MECHANISM: PLAIN without TLS sends the password in clear",
			allow: "ALLOW_INSECURE_KAFKA",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(c.mode, c.base, c.set, c.unset...)
			if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error:\n%v\nwant the one line:\n%s", err, c.want)
			}
			if strings.Contains(err.Error(), ":pw@") {
				t.Errorf("the database password shows: %v", err)
			}
			if c.allow == "" {
				return
			}
			set := map[string]string{c.allow: "true"}
			for k, v := range c.set {
				set[k] = v
			}
			if _, err := load(c.mode, c.base, set, c.unset...); err != nil {
				t.Errorf("with %s=true: %v", c.allow, err)
			}
		})
	}
	// PLAIN on plaintext in production breaks both rules: two lines.
	plainClear := map[string]string{"KAFKA_TLS_ENABLED": "false", "KAFKA_SASL_MECHANISM": "PLAIN", "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "p"}
	if _, err := load(config.Serve, production(), plainClear); err == nil || !strings.Contains(err.Error(), "STREAMING_HUB_KAFKA_SASL_MECHANISM: PLAIN without TLS") ||
		!strings.Contains(err.Error(), "STREAMING_HUB_KAFKA_TLS_ENABLED: ENV=production refuses plaintext Kafka") || strings.Count(err.Error(), "\n") != 1 {
		t.Errorf("PLAIN on plaintext in production: %v", err)
	}
	// ALLOW_INSECURE_KAFKA accepts plaintext and PLAIN in the clear at once.
	if _, err := load(config.Serve, production(), map[string]string{"KAFKA_TLS_ENABLED": "false", "ALLOW_INSECURE_KAFKA": "true",
		"KAFKA_SASL_MECHANISM": "PLAIN", "KAFKA_SASL_USERNAME": "u", "KAFKA_SASL_PASSWORD": "p"}); err != nil {
		t.Errorf("ALLOW_INSECURE_KAFKA=true: %v", err)
	}
	// A role that does not consume has no Kafka to secure.
	if _, err := load(config.Serve, production(), map[string]string{"ROLE": "delivery"}, "KAFKA_TLS_ENABLED", "KAFKA_BROKERS"); err != nil {
		t.Errorf("delivery role in production: %v", err)
	}
	// Dev is not serve: its embedded broker is plaintext whatever ENV says.
	if _, err := load(config.Dev, nil, map[string]string{"ENV": "production"}); err != nil {
		t.Errorf("dev with ENV=production: %v", err)
	}
}

func serveBase() map[string]string {
	b := production()
	delete(b, "STREAMING_HUB_ENV")
	delete(b, "STREAMING_HUB_KAFKA_TLS_ENABLED")
	return b
}

// Lerian's chart names are accepted for the hub's; both names set to
// different values is an error naming both, which never shows a value
// (the Kafka ones), or the hub's own name wins with a warning (HTTP_ADDR,
// DATABASE_URL: TestLoad_ChartNamesYieldToTheHubsOwn).
func TestLoad_TheChartsNamesAreAliases(t *testing.T) {
	cases := []struct {
		name, alias, value string
		got                func(config.Config) string
	}{
		{"KAFKA_SASL_MECHANISM", "KAFKA_SCRAM_MECHANISM", "SCRAM-SHA-512", func(c config.Config) string { return c.Kafka.SASLMechanism }},
		{"KAFKA_SASL_USERNAME", "KAFKA_SCRAM_USERNAME", "hub-user", func(c config.Config) string { return c.Kafka.SASLUsername }},
		{"KAFKA_SASL_PASSWORD", "KAFKA_SCRAM_PASSWORD", "hub-password", func(c config.Config) string { return c.Kafka.SASLPassword }},
	}
	scram := map[string]string{"KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "KAFKA_SASL_USERNAME": "hub-user", "KAFKA_SASL_PASSWORD": "hub-password"}
	for _, c := range cases {
		t.Run(c.alias, func(t *testing.T) {
			base := map[string]string{}
			for k, v := range scram {
				if k != c.name {
					base[k] = v
				}
			}
			// The alias alone.
			set := map[string]string{c.alias: c.value}
			for k, v := range base {
				set[k] = v
			}
			cfg, err := load(config.Serve, production(), set, c.name)
			if err != nil {
				t.Fatalf("%s alone: %v", c.alias, err)
			}
			if got := c.got(cfg); got != c.value {
				t.Fatalf("%s=%q gives %q", c.alias, c.value, got)
			}
			// Both, equal: fine.
			set[c.name] = c.value
			if cfg, err := load(config.Serve, production(), set); err != nil || c.got(cfg) != c.value {
				t.Fatalf("both equal: %v", err)
			}
			// Both, different: one line naming both, without either value.
			other := map[string]string{
				"KAFKA_SASL_MECHANISM": "SCRAM-SHA-256", "KAFKA_SASL_USERNAME": "someone-else", "KAFKA_SASL_PASSWORD": "another-password",
				"HTTP_ADDR": ":8081", "DATABASE_URL": "postgres://x:other@db2/hub?sslmode=require",
			}[c.name]
			set[c.name] = other
			_, err = load(config.Serve, production(), set)
			want := "STREAMING_HUB_" + c.name + ": and STREAMING_HUB_" + c.alias + " are both set, to different values: set only one of them"
			if err == nil || err.Error() != want {
				t.Fatalf("both different: error\n%v\nwant\n%s", err, want)
			}
		})
	}
}

func TestLoad_KafkaSecurity(t *testing.T) {
	pki := testkit.NewPKI(t)
	c, err := load(config.Serve, production(), map[string]string{
		"KAFKA_CA_CERT":         string(pki.CA.CertPEM),
		"KAFKA_TLS_CERT":        pki.Client.CertFile,
		"KAFKA_TLS_KEY":         strings.ReplaceAll(string(pki.Client.KeyPEM), "\n", `\n`), // one line, as some charts write it
		"KAFKA_TLS_SERVER_NAME": "kafka.internal",
		"KAFKA_SASL_MECHANISM":  "scram-sha-256",
		"KAFKA_SASL_USERNAME":   "hub",
		"KAFKA_SASL_PASSWORD":   "pw",
	})
	if err != nil {
		t.Fatal(err)
	}
	// Inline PEM loses its last line break, as every value its spaces.
	want := config.Kafka{TLS: true, CACert: bytes.TrimSpace(pki.CA.CertPEM), TLSCert: pki.Client.CertPEM, TLSKey: pki.Client.KeyPEM,
		ServerName: "kafka.internal", SASLMechanism: "SCRAM-SHA-256", SASLUsername: "hub", SASLPassword: "pw"}
	if !reflect.DeepEqual(c.Kafka, want) {
		t.Fatalf("Kafka = %+v\nwant %+v", c.Kafka, want)
	}
	if d := config.Defaults(config.Serve).Kafka; d.TLS || d.SASLMechanism != "" || d.AllowInsecure || config.Defaults(config.Serve).AllowInsecureDBTLS {
		t.Fatalf("defaults: %+v", d)
	}
}

func TestLoad_BadKafkaSecurityNamesTheVariable(t *testing.T) {
	pki := testkit.NewPKI(t)
	other := testkit.NewPKI(t)
	tlsOn := map[string]string{"KAFKA_TLS_ENABLED": "true"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	cases := []struct {
		set  map[string]string
		want string
	}{
		{with(nil, "KAFKA_TLS_ENABLED", "yes"), `STREAMING_HUB_KAFKA_TLS_ENABLED: must be true or false, got "yes"`},
		{with(nil, "KAFKA_CA_CERT", pki.CA.CertFile), "STREAMING_HUB_KAFKA_CA_CERT: set, but STREAMING_HUB_KAFKA_TLS_ENABLED is not true: the connection would be plaintext"},
		{with(nil, "KAFKA_TLS_SERVER_NAME", "kafka.test"), "STREAMING_HUB_KAFKA_TLS_SERVER_NAME: set, but STREAMING_HUB_KAFKA_TLS_ENABLED is not true"},
		{with(tlsOn, "KAFKA_CA_CERT", "/no/such/ca.pem"), "STREAMING_HUB_KAFKA_CA_CERT: neither PEM (-----BEGIN ...) nor a readable file: open /no/such/ca.pem: no such file or directory"},
		{with(tlsOn, "KAFKA_CA_CERT", "-----BEGIN CERTIFICATE-----\ngarbage"), "STREAMING_HUB_KAFKA_CA_CERT: is not valid PEM"},
		{with(tlsOn, "KAFKA_CA_CERT", string(pki.Client.KeyPEM)), "STREAMING_HUB_KAFKA_CA_CERT: holds no valid PEM certificate"},
		{with(tlsOn, "KAFKA_TLS_CERT", pki.Client.CertFile), "STREAMING_HUB_KAFKA_TLS_KEY: required with STREAMING_HUB_KAFKA_TLS_CERT"},
		{with(tlsOn, "KAFKA_TLS_KEY", pki.Client.KeyFile), "STREAMING_HUB_KAFKA_TLS_CERT: required with STREAMING_HUB_KAFKA_TLS_KEY"},
		{with(tlsOn, "KAFKA_TLS_CERT", pki.Client.CertFile, "KAFKA_TLS_KEY", other.Client.KeyFile), "STREAMING_HUB_KAFKA_TLS_CERT: does not match STREAMING_HUB_KAFKA_TLS_KEY"},
		{with(nil, "KAFKA_SASL_MECHANISM", "GSSAPI"), `STREAMING_HUB_KAFKA_SASL_MECHANISM: must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, got "GSSAPI"`},
		{with(nil, "KAFKA_SASL_MECHANISM", "SCRAM-SHA-512", "KAFKA_SASL_PASSWORD", "pw"), "STREAMING_HUB_KAFKA_SASL_USERNAME: required with STREAMING_HUB_KAFKA_SASL_MECHANISM=SCRAM-SHA-512"},
		{with(nil, "KAFKA_SCRAM_MECHANISM", "SCRAM-SHA-512", "KAFKA_SCRAM_USERNAME", "u"), "STREAMING_HUB_KAFKA_SASL_PASSWORD: required with STREAMING_HUB_KAFKA_SASL_MECHANISM=SCRAM-SHA-512"},
		{with(nil, "KAFKA_SASL_USERNAME", "u"), "STREAMING_HUB_KAFKA_SASL_USERNAME: set, but STREAMING_HUB_KAFKA_SASL_MECHANISM is empty: no SASL would be used"},
		{with(nil, "ALLOW_INSECURE_KAFKA", "maybe"), `STREAMING_HUB_ALLOW_INSECURE_KAFKA: must be true or false, got "maybe"`},
		{with(nil, "ALLOW_INSECURE_DB_TLS", "maybe"), `STREAMING_HUB_ALLOW_INSECURE_DB_TLS: must be true or false, got "maybe"`},
	}
	for _, c := range cases {
		_, err := load(config.Dev, nil, c.set)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v:\nerror %v\nwant the one line %q", c.set, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("a key shows in %v", err)
		}
	}
	// LoadKafka, for `streaming-hub produce`, reads and checks the same.
	if _, err := config.LoadKafka(func(k string) string {
		return map[string]string{"STREAMING_HUB_KAFKA_SASL_MECHANISM": "PLAIN", "STREAMING_HUB_KAFKA_SASL_USERNAME": "u", "STREAMING_HUB_KAFKA_SASL_PASSWORD": "p"}[k]
	}); err == nil || !strings.HasPrefix(err.Error(), "STREAMING_HUB_KAFKA_SASL_MECHANISM: PLAIN without TLS") {
		t.Errorf("LoadKafka: %v", err)
	}
}

func TestKnown_HasTheSecurityVariablesAndTheAliases(t *testing.T) {
	known := strings.Join(config.Known(), " ")
	for _, name := range []string{"KAFKA_TLS_ENABLED", "KAFKA_CA_CERT", "KAFKA_TLS_CERT", "KAFKA_TLS_KEY", "KAFKA_TLS_SERVER_NAME",
		"KAFKA_SASL_MECHANISM", "KAFKA_SASL_USERNAME", "KAFKA_SASL_PASSWORD", "ALLOW_INSECURE_KAFKA", "ALLOW_INSECURE_DB_TLS",
		"KAFKA_SCRAM_MECHANISM", "KAFKA_SCRAM_USERNAME", "KAFKA_SCRAM_PASSWORD", "HTTP_LISTEN_ADDR", "POSTGRES_DSN"} {
		if !strings.Contains(" "+known+" ", " "+name+" ") {
			t.Errorf("Known() lacks %s", name)
		}
	}
	if got := config.Unknown([]string{"STREAMING_HUB_KAFKA_SCRAM_PASSWORD=x", "STREAMING_HUB_KAFKA_SASL_PASWORD=x"}); len(got) != 1 ||
		got[0] != "STREAMING_HUB_KAFKA_SASL_PASWORD: unknown; did you mean STREAMING_HUB_KAFKA_SASL_PASSWORD?" {
		t.Errorf("Unknown = %q", got)
	}
}
