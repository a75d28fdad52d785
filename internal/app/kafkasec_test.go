package app_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/devhub"
	"github.com/lerianstudio/streaming-hub/internal/kafkasec"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const securedTopic = "lerian.streaming.ledger_transaction.posted"

// securedProducer is a franz-go client configured from the same
// variables as the hub, as `streaming-hub produce` is.
func securedProducer(t *testing.T, kafka *kfake.Cluster, env map[string]string) *kgo.Client {
	t.Helper()
	k, err := config.LoadKafka(func(name string) string { return env[name] })
	if err != nil {
		t.Fatal(err)
	}
	sec, err := kafkasec.New(k, nil)
	if err != nil {
		t.Fatal(err)
	}
	return testkit.Producer(t, kafka, sec.Opts()...)
}

// Over SASL only franz-go clients speak to kfake here: librdkafka 2.x
// enables SASL only when the broker lists SaslHandshake v0, and kfake
// lists v1 alone. kcat speaks TLS to the broker below instead.
func TestSecuredKafka_TheHubConsumesCommitsAndDelivers(t *testing.T) {
	pki := testkit.NewPKI(t)
	tlsEnv := map[string]string{
		"STREAMING_HUB_KAFKA_TLS_ENABLED": "true",
		"STREAMING_HUB_KAFKA_CA_CERT":     pki.CA.CertFile,
	}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out["STREAMING_HUB_"+kv[i]] = kv[i+1]
		}
		return out
	}
	cases := []struct {
		name   string
		broker []kfake.Opt
		env    map[string]string
		kcat   []string // when set, kcat also produces with these -X settings
	}{
		{
			name:   "SASL PLAIN over TLS",
			broker: []kfake.Opt{kfake.TLS(pki.ServerTLS(false)), kfake.EnableSASL(), kfake.Superuser("PLAIN", "hub", "plain-secret")},
			env:    with(tlsEnv, "KAFKA_SASL_MECHANISM", "PLAIN", "KAFKA_SASL_USERNAME", "hub", "KAFKA_SASL_PASSWORD", "plain-secret"),
		},
		{
			name:   "SCRAM-SHA-256",
			broker: []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "hub", "scram-256-secret")},
			env:    with(nil, "KAFKA_SASL_MECHANISM", "SCRAM-SHA-256", "KAFKA_SASL_USERNAME", "hub", "KAFKA_SASL_PASSWORD", "scram-256-secret"),
		},
		{
			name:   "SCRAM-SHA-512 over TLS, the chart's names, the CA inline",
			broker: []kfake.Opt{kfake.TLS(pki.ServerTLS(false)), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "hub", "scram-512-secret")},
			env: with(nil, "KAFKA_TLS_ENABLED", "true", "KAFKA_CA_CERT", string(pki.CA.CertPEM),
				"KAFKA_SCRAM_MECHANISM", "SCRAM-SHA-512", "KAFKA_SCRAM_USERNAME", "hub", "KAFKA_SCRAM_PASSWORD", "scram-512-secret"),
		},
		{
			name:   "TLS to a broker whose certificate holds another name",
			broker: []kfake.Opt{kfake.TLS(pki.ServerTLSWith(pki.NamedServer, false))},
			env:    with(tlsEnv, "KAFKA_TLS_SERVER_NAME", "kafka.test"),
		},
		{
			name:   "mutual TLS, and kcat producing to the same broker",
			broker: []kfake.Opt{kfake.TLS(pki.ServerTLS(true))},
			env:    with(tlsEnv, "KAFKA_TLS_CERT", pki.Client.CertFile, "KAFKA_TLS_KEY", pki.Client.KeyFile),
			kcat: []string{"security.protocol=ssl", "ssl.ca.location=" + pki.CA.CertFile,
				"ssl.certificate.location=" + pki.Client.CertFile, "ssl.key.location=" + pki.Client.KeyFile},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kafka := testkit.KafkaWith(t, 1, []string{securedTopic}, c.broker...)
			env := with(c.env, "KAFKA_BROKERS", strings.Join(kafka.ListenAddrs(), ","), "DISPATCH_IDLE_INTERVAL_MS", "20")
			clock := testkit.NewClock()
			h := devhub.Start(t, devhub.Options{Env: env, Now: clock.Now})
			prod := securedProducer(t, kafka, env)
			l := &liveHub{Hub: h, t: t, clock: clock, prod: prod}
			sink := newRecorder(t)
			l.subscribe("acme", sink.URL, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", nil)

			l.produce(testkit.CERecord(securedTopic, 0, "acme", "franz-1"))
			want := 1
			if c.kcat != nil {
				if _, err := exec.LookPath("kcat"); err != nil {
					t.Log("kcat is not installed (apt-get install kcat): only franz-go produced")
				} else {
					kcatTLS(t, kafka.ListenAddrs()[0], c.kcat, "kcat-1")
					want++
				}
			}
			testkit.WaitFor(t, "the deliveries", func() bool { return sink.count() == want })
			for i := range want {
				req, _ := sink.request(i)
				if req.Header.Get("X-Lerian-Event-Type") != "transaction.posted" || req.Header.Get("X-Lerian-Tenant-Id") != "acme" {
					t.Errorf("delivery %d: headers %v", i, req.Header)
				}
			}
			testkit.WaitFor(t, "the offset committed", func() bool {
				return testkit.CommittedOffsets(t, prod, h.Config.Ingest.Group, securedTopic)[0] == int64(want)
			})
		})
	}
}

// kcatTLS produces one binary-mode CloudEvent with kcat (librdkafka) over TLS.
func kcatTLS(t *testing.T, broker string, settings []string, id string) {
	t.Helper()
	args := []string{"-P", "-b", broker, "-t", securedTopic, "-k", "acme"}
	for _, s := range settings {
		args = append(args, "-X", s)
	}
	for _, h := range []string{"ce-specversion=1.0", "ce-id=" + id, "ce-source=//midaz/ledger", "ce-type=studio.lerian.transaction.posted",
		"ce-time=2026-11-30T12:00:00Z", "ce-tenantid=acme", "ce-schemaversion=1.0.0", "content-type=application/json"} {
		args = append(args, "-H", h)
	}
	cmd := exec.Command("kcat", args...)
	cmd.Stdin = strings.NewReader(`{"amount":"1.00"}` + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat: %v\n%s", err, out)
	}
}

// A broker that refuses the hub's password or certificate, or whose
// certificate the hub does not trust, fails readiness with the cause
// named, in /readyz and in one log line, never with the password.
func TestSecuredKafka_ARefusedConnectionFailsReadinessWithTheCause(t *testing.T) {
	testkit.Long(t)
	pki := testkit.NewPKI(t)
	other := testkit.NewPKI(t)
	const password = "the-right-password"
	const wrong = "a-wrong-password-9f3c"
	cases := []struct {
		name   string
		broker []kfake.Opt
		env    map[string]string
		cause  string
	}{
		{
			name:   "wrong SCRAM-SHA-512 password",
			broker: []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "hub", password)},
			env:    map[string]string{"KAFKA_SASL_MECHANISM": "SCRAM-SHA-512", "KAFKA_SASL_USERNAME": "hub", "KAFKA_SASL_PASSWORD": wrong},
			cause:  "kafka: SASL authentication failed",
		},
		{
			name:   "wrong PLAIN password over TLS",
			broker: []kfake.Opt{kfake.TLS(pki.ServerTLS(false)), kfake.EnableSASL(), kfake.Superuser("PLAIN", "hub", password)},
			env: map[string]string{"KAFKA_TLS_ENABLED": "true", "KAFKA_CA_CERT": pki.CA.CertFile,
				"KAFKA_SASL_MECHANISM": "PLAIN", "KAFKA_SASL_USERNAME": "hub", "KAFKA_SASL_PASSWORD": wrong},
			cause: "kafka: SASL authentication failed",
		},
		{
			name:   "a CA that did not sign the broker's certificate",
			broker: []kfake.Opt{kfake.TLS(pki.ServerTLS(false))},
			env:    map[string]string{"KAFKA_TLS_ENABLED": "true", "KAFKA_CA_CERT": other.CA.CertFile},
			cause:  "kafka: certificate signed by unknown authority",
		},
		{
			name:   "no client certificate for a broker that requires one",
			broker: []kfake.Opt{kfake.TLS(pki.ServerTLS(true))},
			env:    map[string]string{"KAFKA_TLS_ENABLED": "true", "KAFKA_CA_CERT": pki.CA.CertFile},
			cause:  "kafka: the broker requires a client certificate",
		},
		{
			name:   "a broker certificate for another name",
			broker: []kfake.Opt{kfake.TLS(pki.ServerTLSWith(pki.NamedServer, false))},
			env:    map[string]string{"KAFKA_TLS_ENABLED": "true", "KAFKA_CA_CERT": pki.CA.CertFile},
			cause:  "kafka: certificate is not valid for 127.0.0.1",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kafka := testkit.KafkaWith(t, 1, []string{securedTopic}, c.broker...)
			env := map[string]string{
				"STREAMING_HUB_HTTP_ADDR":     "127.0.0.1:0",
				"STREAMING_HUB_DATABASE_URL":  "sqlite://" + filepath.Join(t.TempDir(), "hub.db"),
				"STREAMING_HUB_KAFKA_BROKERS": strings.Join(kafka.ListenAddrs(), ","),
			}
			for k, v := range c.env {
				env["STREAMING_HUB_"+k] = v
			}
			cfg, err := config.Load(config.Dev, func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			logs := &testkit.Buffer{}
			h := &app.Hub{Config: cfg, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
			if err := h.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				h.Shutdown(ctx)
			})

			var body string
			testkit.WaitFor(t, "/readyz to name "+c.cause, func() bool {
				status, b := readyz(t, h)
				var r struct{ Checks map[string]string }
				json.Unmarshal([]byte(b), &r)
				body = b
				return status == http.StatusServiceUnavailable && strings.HasPrefix(r.Checks["kafka"], c.cause)
			})
			// The refusal repeats as franz-go retries; its cause is logged once.
			// A connection that passes TLS asks ApiVersions first; one that
			// fails TLS leaves franz-go's (demoted) line.
			var conns atomic.Int64
			kafka.ControlKey(int16(kmsg.ApiVersions), func(kmsg.Request) (kmsg.Response, error, bool) {
				conns.Add(1)
				return nil, nil, false
			})
			testkit.WaitFor(t, "three more connection attempts", func() bool {
				return conns.Load()+int64(strings.Count(logs.String(), `level=DEBUG msg="kafka: unable to`)) >= 3
			})
			if n := strings.Count(logs.String(), c.cause); n != 1 {
				t.Errorf("the cause is on %d log lines, want 1:\n%s", n, logs)
			}
			for _, secret := range []string{password, wrong} {
				if strings.Contains(body, secret) || strings.Contains(logs.String(), secret) {
					t.Errorf("a password shows in /readyz or the log:\n%s\n%s", body, logs)
				}
			}
		})
	}
}

func readyz(t *testing.T, h *app.Hub) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + h.HTTPAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
