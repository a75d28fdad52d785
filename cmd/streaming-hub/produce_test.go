package main

import (
	"context"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// produce speaks TLS and SASL with the hub's variables, each overridden by
// its flag.
func TestProduce_OverTLSWithSCRAM(t *testing.T) {
	pki := testkit.NewPKI(t)
	const topic = "lerian.streaming.ledger_transaction.posted"
	kafka := testkit.KafkaWith(t, 1, []string{topic},
		kfake.TLS(pki.ServerTLS(false)), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "hub", "scram-secret"))
	brokers := strings.Join(kafka.ListenAddrs(), ",")

	// The CA from a flag, the rest from the variables (the chart's names).
	vars := map[string]string{
		"STREAMING_HUB_KAFKA_BROKERS":         brokers,
		"STREAMING_HUB_KAFKA_TLS_ENABLED":     "true",
		"STREAMING_HUB_KAFKA_SCRAM_MECHANISM": "SCRAM-SHA-512",
		"STREAMING_HUB_KAFKA_SCRAM_USERNAME":  "hub",
		"STREAMING_HUB_KAFKA_SASL_PASSWORD":   "scram-secret",
		"STREAMING_HUB_TENANT":                "acme",
	}
	code, out, errOut := runCmd(vars, "produce", "--ca-cert", pki.CA.CertFile, "--id", "evt-tls-1", "--timeout", "1m")
	if code != exitOK || !strings.HasPrefix(out, "produced ce-id=evt-tls-1 tenant=acme topic="+topic) {
		t.Fatalf("produce: exit %d\n%s%s", code, out, errOut)
	}
	cl := testkit.Producer(t, kafka, kgo.DialTLSConfig(pki.ClientTLS()),
		kgo.SASL(scram.Auth{User: "hub", Pass: "scram-secret"}.AsSha512Mechanism()), kgo.ConsumeTopics(topic))
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	fetches := cl.PollFetches(ctx)
	if recs := fetches.Records(); len(recs) != 1 || string(recs[0].Key) != "acme" {
		t.Fatalf("the broker holds %d records (%v)", len(recs), fetches.Errors())
	}

	// A wrong password: one line naming the cause, without the password.
	// The broker refuses at once; --timeout is only a safety net here (on a
	// loaded machine a TLS handshake and SCRAM's rounds took over 10 s).
	patience := testkit.Patience.String()
	vars["STREAMING_HUB_KAFKA_SASL_PASSWORD"] = "wrong-secret-77"
	code, out, errOut = runCmd(vars, "produce", "--ca-cert", pki.CA.CertFile, "--timeout", patience)
	if code != exitError || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, ": kafka: SASL authentication failed") || strings.Contains(errOut, "wrong-secret-77") {
		t.Fatalf("wrong password: exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}
	// Without --ca-cert the system roots do not know the test's CA.
	vars["STREAMING_HUB_KAFKA_SASL_PASSWORD"] = "scram-secret"
	code, _, errOut = runCmd(vars, "produce", "--timeout", patience)
	if code != exitError || !strings.Contains(errOut, ": kafka: certificate signed by unknown authority") {
		t.Fatalf("unknown CA: exit %d, %q", code, errOut)
	}
}

func TestProduce_RefusesPlainWithoutTLSNamingTheFlag(t *testing.T) {
	vars := map[string]string{"STREAMING_HUB_KAFKA_SASL_USERNAME": "u", "STREAMING_HUB_KAFKA_SASL_PASSWORD": "p"}
	code, _, errOut := runCmd(vars, "produce", "--brokers", "127.0.0.1:1", "--sasl-mechanism", "PLAIN")
	if code != exitUsage || errOut != "streaming-hub produce: --sasl-mechanism: PLAIN without TLS sends the password in clear: set STREAMING_HUB_KAFKA_TLS_ENABLED=true (or STREAMING_HUB_ALLOW_INSECURE_KAFKA=true to accept it)\n" {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	code, _, errOut = runCmd(nil, "produce", "--brokers", "127.0.0.1:1", "--ca-cert", "/no/such.pem")
	if code != exitUsage || !strings.HasPrefix(errOut, "streaming-hub produce: --ca-cert: ") {
		t.Fatalf("exit %d, %q", code, errOut)
	}
}
