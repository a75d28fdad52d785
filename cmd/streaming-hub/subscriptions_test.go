package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A subscription's destination in the CLI's listing: a NATS one shows its
// URL (never credentials: the API does not return them), subject and
// stream; a Pub/Sub one its topic's full name (never its key).
func TestSubscriptionWhere(t *testing.T) {
	var s subscriptionView
	s.Destination.Type, s.Destination.URL, s.Destination.Subject = "nats", "tls://nats.example.com:4222", "events.acme"
	if got := s.where(); got != "tls://nats.example.com:4222 subject=events.acme" {
		t.Fatalf("where() = %q", got)
	}
	s.Destination.Stream = "EVENTS"
	if got := s.where(); got != "tls://nats.example.com:4222 subject=events.acme stream=EVENTS" {
		t.Fatalf("where() = %q", got)
	}
	var p subscriptionView
	p.Destination.Type, p.Destination.Project, p.Destination.Topic = "pubsub", "acme-events", "events"
	if got := p.where(); got != "pubsub://projects/acme-events/topics/events" {
		t.Fatalf("where() = %q", got)
	}
}

// --backfill-since takes a time or a duration back from now.
func TestBackfillSince(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"2026-11-30T11:00:00Z":      "2026-11-30T11:00:00Z",
		"2026-11-30T10:30:00+01:00": "2026-11-30T10:30:00+01:00",
		"1h":                        "2026-11-30T11:00:00Z",
		"90m":                       "2026-11-30T10:30:00Z",
	} {
		if got, err := backfillSince(in, now); err != nil || got != want {
			t.Errorf("backfillSince(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"yesterday", "-1h", ""} {
		if _, err := backfillSince(in, now); err == nil {
			t.Errorf("backfillSince(%q) accepted", in)
		}
	}
}

// create --backfill-since sends the backfill; get shows its progress.
func TestSubscriptionsBackfillFlagAndProgress(t *testing.T) {
	var body map[string]any
	answer := `{"id":"sub_1","name":"hooks","event_types":[],"destination":{"type":"webhook","url":"https://e.com"},
		"backfill":{"since":"2026-11-30T11:00:00Z","state":"running","started_at":"2026-11-30T12:00:05Z","finished_at":null,
		"matched":42,"queued":40,"skipped":2,"sequence":500,"until_sequence":1200}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusOK
		if r.Method == "POST" {
			json.NewDecoder(r.Body).Decode(&body)
			status = http.StatusCreated
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	c := newCLI(t, srv.URL, "tok")
	c.ok("subscriptions", "create", "--name", "hooks", "--event-type", "transaction.posted@1", "--url", "https://e.com",
		"--backfill-since", "2026-11-30T11:00:00Z")
	if got := fmt.Sprint(body["backfill"]); got != "map[since:2026-11-30T11:00:00Z]" {
		t.Fatalf("create sent backfill %s", got)
	}
	out := c.ok("subscriptions", "get", "sub_1")
	if got := field(t, out, "backfill"); got != "running (since 2026-11-30T11:00:00Z): 40 queued, 2 skipped of 42 matched; sequence 500 of 1200" {
		t.Fatalf("get shows backfill %q", got)
	}
	if errOut := c.fail(exitUsage, "subscriptions", "update", "sub_1", "--backfill-since", "soon"); !strings.Contains(errOut, "--backfill-since") {
		t.Fatalf("a bad --backfill-since: %s", errOut)
	}
}

// Every destination type is made from flags: the API takes the body they
// build, and shows the destination back (secrets never).
func TestCLI_SubscriptionDestinationFlags(t *testing.T) {
	h := startHub(t)
	c := newCLI(t, h.URL(), h.Config.AdminToken, "STREAMING_HUB_TENANT", "default")
	base := []string{"subscriptions", "create", "--event-type", "transaction.posted@1"}
	type dest struct {
		Type       string   `json:"type"`
		URL        string   `json:"url"`
		Exchange   string   `json:"exchange"`
		RoutingKey string   `json:"routing_key"`
		Brokers    []string `json:"brokers"`
		Topic      string   `json:"topic"`
		TLS        bool     `json:"tls"`
		Subject    string   `json:"subject"`
		Stream     string   `json:"stream"`
		Project    string   `json:"project"`
	}
	var s struct {
		ID          string `json:"id"`
		Destination dest   `json:"destination"`
	}
	c.json(&s, append(base, "--name", "rmq", "--type", "rabbitmq", "--amqp-url", "amqp://127.0.0.1:5672/", "--exchange", "ledger", "--routing-key", "tx")...)
	if d := s.Destination; d.Type != "rabbitmq" || d.Exchange != "ledger" || d.RoutingKey != "tx" || !strings.HasPrefix(d.URL, "amqp://127.0.0.1:5672") {
		t.Fatalf("rabbitmq: %+v", d)
	}
	c.json(&s, append(base, "--name", "kafka", "--type", "kafka", "--brokers", "127.0.0.1:9092, 127.0.0.1:9093", "--topic", "out",
		"--tls", "true", "--sasl-mechanism", "SCRAM-SHA-256", "--sasl-username", "u", "--sasl-password", "secret-pass")...)
	if d := s.Destination; d.Type != "kafka" || d.Topic != "out" || len(d.Brokers) != 2 || d.Brokers[1] != "127.0.0.1:9093" || !d.TLS {
		t.Fatalf("kafka: %+v", d)
	}
	if out := c.ok("subscriptions", "get", s.ID, "-o", "json"); strings.Contains(out, "secret-pass") {
		t.Fatalf("the SASL password is shown:\n%s", out)
	}
	c.json(&s, append(base, "--name", "nats", "--type", "nats", "--nats-url", "nats://127.0.0.1:4222", "--subject", "ledger.tx", "--stream", "LEDGER")...)
	if d := s.Destination; d.Type != "nats" || d.Subject != "ledger.tx" || d.Stream != "LEDGER" || d.URL != "nats://127.0.0.1:4222" {
		t.Fatalf("nats: %+v", d)
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(rk)
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	keyJSON, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": "acme-prod", "client_email": "hub@acme-prod.iam.gserviceaccount.com", "private_key": pemKey})
	key := string(keyJSON)
	code, out, errOut := runCmdStdin(c.vars, key, append(base, "--name", "ps", "--type", "pubsub", "--project", "acme-prod", "--topic", "ledger", "--credentials-file", "-", "-o", "json")...)
	if code != exitOK || strings.Contains(out, "PRIVATE KEY") {
		t.Fatalf("pubsub: exit %d\n%s%s", code, out, errOut)
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.Destination.Type != "pubsub" || s.Destination.Project != "acme-prod" || s.Destination.Topic != "ledger" {
		t.Fatalf("pubsub: %v %+v", err, s.Destination)
	}
	// update changes one field of the destination.
	c.json(&s, "subscriptions", "update", s.ID, "--topic", "ledger-2")
	if s.Destination.Topic != "ledger-2" || s.Destination.Type != "pubsub" {
		t.Fatalf("update --topic: %+v", s.Destination)
	}

	// AWS destinations: the resource flag implies the type; the answer
	// (and get) shows the external id the hub made for the role's trust.
	var a struct {
		ID          string `json:"id"`
		Destination struct {
			Type        string `json:"type"`
			QueueURL    string `json:"queue_url"`
			RoleARN     string `json:"role_arn"`
			ExternalID  string `json:"external_id"`
			EventBusARN string `json:"event_bus_arn"`
			Source      string `json:"source"`
		} `json:"destination"`
	}
	const role = "arn:aws:iam::111122223333:role/streaming-hub"
	c.json(&a, append(base, "--name", "sqs", "--aws-sqs-queue-url", "https://sqs.eu-west-1.amazonaws.com/111122223333/ledger", "--aws-role-arn", role)...)
	if d := a.Destination; d.Type != "aws_sqs" || d.QueueURL != "https://sqs.eu-west-1.amazonaws.com/111122223333/ledger" || d.RoleARN != role || !strings.HasPrefix(d.ExternalID, "shx_") {
		t.Fatalf("aws_sqs: %+v", d)
	}
	if got := field(t, c.ok("subscriptions", "get", a.ID), "external_id"); got != a.Destination.ExternalID {
		t.Fatalf("get shows external_id %q, want %q", got, a.Destination.ExternalID)
	}
	c.json(&a, append(base, "--name", "bus", "--type", "aws_eventbridge", "--aws-eventbridge-bus-arn", "arn:aws:events:eu-west-1:111122223333:event-bus/default",
		"--aws-eventbridge-source", "com.acme.ledger", "--aws-role-arn", role)...)
	if d := a.Destination; d.Type != "aws_eventbridge" || d.Source != "com.acme.ledger" || d.EventBusARN == "" {
		t.Fatalf("aws_eventbridge: %+v", d)
	}

	// Mistakes are usage errors naming the flag.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--name", "x", "--type", "smtp"}, "--type: one of webhook, rabbitmq, kafka, nats, pubsub"},
		{[]string{"--name", "x", "--type", "kafka", "--brokers", "b:1"}, "--topic: required"},
		{[]string{"--name", "x", "--type", "rabbitmq", "--amqp-url", "amqp://h/", "--exchange", "e", "--subject", "s"}, "--subject is for --type nats, not rabbitmq"},
		{[]string{"--name", "x", "--exchange", "e", "--url", "http://h/"}, "--exchange is for --type rabbitmq, not webhook"},
		{[]string{"--name", "x", "--aws-sqs-queue-url", "https://sqs.eu-west-1.amazonaws.com/111122223333/q"}, "--aws-role-arn: required"},
		{[]string{"--name", "x", "--aws-sns-topic-arn", "arn:aws:sns:eu-west-1:111122223333:t", "--aws-role-arn", "r", "--aws-eventbridge-source", "s"}, "--aws-eventbridge-source is for --type aws_eventbridge, not aws_sns"},
	} {
		if errOut := c.fail(exitUsage, append(base, tc.args...)...); !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: %q, want %q", tc.args, errOut, tc.want)
		}
	}
}

// subscriptions disabled lists GET /v1/admin/disabled-subscriptions: one
// page, its cursor passed on, a row per subscription with its tenant and
// reason.
func TestSubscriptionsDisabledListsTheAdminRoute(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("X-Tenant-Id"))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":[{"id":"sub_1","tenant_id":"acme","name":"hooks","enabled":false,
			"disabled_reason":"auto-disabled: failing for 120h","disabled_at":"2026-11-30T12:00:00Z",
			"event_types":[],"destination":{"type":"webhook","url":"https://e.com"}}],"next_cursor":"abc"}`)
	}))
	defer srv.Close()
	c := newCLI(t, srv.URL, "admin-token", "STREAMING_HUB_TENANT", "globex")
	code, out, errOut := runCmd(c.vars, "subscriptions", "disabled", "--limit", "1", "--cursor", "xyz")
	if code != exitOK || strings.TrimSpace(errOut) != "more: --cursor abc" {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if want := "GET /v1/admin/disabled-subscriptions?cursor=xyz&limit=1 "; len(asked) != 1 || asked[0] != want {
		t.Fatalf("asked %q, want %q (no tenant: the list is every tenant's)", asked, want)
	}
	if r := row(t, out, "acme"); r[1] != "sub_1" || r[2] != "hooks" || r[3] != "2026-11-30T12:00:00Z" ||
		!strings.Contains(out, "auto-disabled: failing for 120h") {
		t.Fatalf("table:\n%s", out)
	}
}

// The --oauth-* flags make a webhook's oauth2_client_credentials auth (the
// secret read from stdin, never shown); --signature-scheme v1a makes an
// Ed25519 subscription whose answer and rotation show the public key.
func TestCLI_SubscriptionOAuthAndSignatureFlags(t *testing.T) {
	h := startHub(t)
	c := newCLI(t, h.URL(), h.Config.AdminToken, "STREAMING_HUB_TENANT", "default")
	base := []string{"subscriptions", "create", "--event-type", "transaction.posted@1", "--url", "http://127.0.0.1:1/hook"}
	code, out, errOut := runCmdStdin(c.vars, "cli-SECRET-42\n", append(base, "--name", "oauth", "--oauth-token-url", "http://127.0.0.1:1/token",
		"--oauth-client-id", "hub", "--oauth-client-secret", "-", "--oauth-scope", "events:write", "--oauth-client-auth", "body",
		"--signature-scheme", "v1a", "-o", "json")...)
	if code != exitOK || strings.Contains(out+errOut, "cli-SECRET-42") {
		t.Fatalf("create: exit %d\n%s%s", code, out, errOut)
	}
	var s struct {
		ID          string `json:"id"`
		Destination struct {
			Auth map[string]string `json:"auth"`
		} `json:"destination"`
		Signature        struct{ Scheme string } `json:"signature"`
		SigningPublicKey string                  `json:"signing_public_key"`
		SigningSecret    string                  `json:"signing_secret"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"type": "oauth2_client_credentials", "token_url": "http://127.0.0.1:1/token", "client_id": "hub", "scope": "events:write", "client_auth": "body"}
	if fmt.Sprint(s.Destination.Auth) != fmt.Sprint(want) || s.Signature.Scheme != "v1a" || !strings.HasPrefix(s.SigningPublicKey, "whpk_") || s.SigningSecret != "" {
		t.Fatalf("created %+v", s)
	}
	if out := c.ok("subscriptions", "get", s.ID); !strings.Contains(out, "token_url http://127.0.0.1:1/token") || !strings.Contains(out, s.SigningPublicKey) {
		t.Fatalf("get:\n%s", out)
	}
	if out := c.ok("subscriptions", "rotate-secret", s.ID); !strings.Contains(out, "signing_public_key") || strings.Contains(out, s.SigningPublicKey) || !strings.Contains(out, "whpk_") {
		t.Fatalf("rotate-secret of a v1a subscription:\n%s", out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--name", "x", "--oauth-token-url", "https://a/token", "--oauth-client-id", "c"}, "--oauth-client-secret: required"},
		{[]string{"--name", "x", "--oauth-token-url", "https://a/token", "--oauth-client-id", "c", "--oauth-client-secret", "s", "--oauth-client-auth", "jwt"}, "--oauth-client-auth: basic or body"},
		{[]string{"--name", "x", "--signature-scheme", "v2"}, "--signature-scheme: v1 or v1a"},
		{[]string{"--name", "x", "--type", "kafka", "--brokers", "b:1", "--topic", "t", "--oauth-client-id", "c"}, "--oauth-client-id is for --type webhook, not kafka"},
	} {
		args := append(append([]string(nil), base...), tc.args...)
		if tc.args[2] == "--type" { // no --url for a broker
			args = append([]string{"subscriptions", "create", "--event-type", "transaction.posted@1"}, tc.args...)
		}
		if errOut := c.fail(exitUsage, args...); !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: %q, want %q", tc.args, errOut, tc.want)
		}
	}
}
