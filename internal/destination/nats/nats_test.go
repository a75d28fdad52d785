package nats_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/nats"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
	"github.com/nats-io/nats.go/jetstream"
)

func publisher(t testing.TB) *nats.Publisher {
	t.Helper()
	return publisherWithTLS(t, nil)
}

// publisherWithTLS is a publisher whose tls:// connections start from
// base (nil: the system roots).
func publisherWithTLS(t testing.TB, base *tls.Config) *nats.Publisher {
	t.Helper()
	d := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	p, err := nats.New(nats.Options{Dial: d.DialContext, TLS: base})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func target(n *testkit.NATS, subject, stream string) destination.Target {
	return destination.Target{
		Destination: hub.Destination{Type: hub.DestinationNATS, URL: n.URL, Subject: subject, Stream: stream},
		Credentials: hub.Credentials{Username: n.User, Password: n.Pass},
	}
}

func message(id, delivery string) destination.Message {
	return destination.Message{ID: id, EventType: "transaction.posted", TenantID: "acme", ContentType: "application/json",
		Body: []byte(`{"id":"` + id + `"}`), Time: time.Unix(1700000000, 0),
		Headers: http.Header{"ce-id": {id}, "ce-type": {"com.lerian.transaction.posted.v1"}, "X-Lerian-Delivery-Id": {delivery}, "webhook-signature": {"v1,abc"}}}
}

func send(t testing.TB, p *nats.Publisher, tg destination.Target, m destination.Message) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scaled(10*time.Second))
	defer cancel()
	return p.Send(ctx, tg, m).Err
}

func TestPublish_LandsInTheStreamWithMsgIDAndHeaders_AndARedeliveryIsDeduplicated(t *testing.T) {
	n := testkit.NewNATS(t, "hub", "s3cret")
	n.CreateStream(t, "EVENTS", "events.>")
	m := sendTwiceLandsOnce(t, n, publisher(t))
	for k, want := range map[string]string{"Nats-Msg-Id": "evt-1", "ce-id": "evt-1", "ce-type": "com.lerian.transaction.posted.v1",
		"X-Lerian-Delivery-Id": "att_1", "webhook-signature": "v1,abc", "content-type": "application/json"} {
		if got := m.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q (headers %v)", k, got, want, m.Header)
		}
	}
}

func TestPublish_NoStreamForTheSubjectFails(t *testing.T) {
	n := testkit.NewNATS(t)
	n.CreateStream(t, "EVENTS", "events.>")
	p := publisher(t)
	err := send(t, p, target(n, "elsewhere.acme", ""), message("evt-1", "att_1"))
	if err == nil || !strings.Contains(err.Error(), `no JetStream stream answered for subject "elsewhere.acme"`) {
		t.Fatalf("err = %v", err)
	}
	// A stream named that does not capture the subject's messages.
	n.CreateStream(t, "OTHER", "other.>")
	err = send(t, p, target(n, "events.acme", "OTHER"), message("evt-2", "att_2"))
	if err == nil || !strings.Contains(err.Error(), "nats: publish:") {
		t.Fatalf("err = %v", err)
	}
	if got := len(n.Messages(t, "EVENTS")); got != 0 {
		t.Fatalf("%d messages stored", got)
	}
}

func TestProbe_NeedsTheStreamToExist(t *testing.T) {
	n := testkit.NewNATS(t)
	n.CreateStream(t, "EVENTS", "events.>")
	p := publisher(t)
	wait := testkit.Scaled(10 * time.Second) // the delivery timeout: a local fake or server answers well within it
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	r := destination.NewRegistry(wait, map[string]destination.Driver{hub.DestinationNATS: p})
	signed := func(t destination.Target) destination.Target {
		t.Secrets = []string{"whsec_" + strings.Repeat("A", 32)}
		return t
	}
	res := r.Probe(ctx, signed(target(n, "events.acme", "MISSING")), "acme", "sub_1", time.Now())
	if res.Passed || !strings.Contains(res.Error, `stream "MISSING" does not exist`) {
		t.Fatalf("probe %+v", res)
	}
	res = r.Probe(ctx, signed(target(n, "events.acme", "EVENTS")), "acme", "sub_1", time.Now())
	if !res.Passed {
		t.Fatalf("probe %+v", res)
	}
	msgs := n.Messages(t, "EVENTS")
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Data), `"type":"hub.verification"`) || msgs[0].Subject != "events.acme" {
		t.Fatalf("messages %+v", msgs)
	}
}

func TestPublish_AfterAServerRestartDialsAgain(t *testing.T) {
	n := testkit.NewNATS(t)
	n.CreateStream(t, "EVENTS", "events.>")
	p := publisher(t)
	tg := target(n, "events.acme", "EVENTS")
	if err := send(t, p, tg, message("evt-1", "att_1")); err != nil {
		t.Fatal(err)
	}
	n.Stop(t)
	n.Start(t)
	// The next attempt dials again and delivers.
	if err := send(t, p, tg, message("evt-2", "att_2")); err != nil {
		t.Fatal(err)
	}
	if got := len(n.Messages(t, "EVENTS")); got != 2 {
		t.Fatalf("%d messages, want 2", got)
	}
	if p.Conns() != 1 {
		t.Fatalf("%d connections", p.Conns())
	}
}

func TestPublish_ErrorsNeverShowTheCredentials(t *testing.T) {
	n := testkit.NewNATS(t, "hub", "s3cret")
	p := publisher(t)
	tg := target(n, "events.acme", "")
	tg.Credentials.Password = "wrong-pass"
	err := send(t, p, tg, message("evt-1", "att_1"))
	if err == nil || strings.Contains(err.Error(), "wrong-pass") {
		t.Fatalf("err = %v", err)
	}
}

// A server that is down fails the attempt at connecting; the pool keeps
// nothing, so the next attempt dials again.
func TestPublish_ServerDownFailsAndKeepsNoConnection(t *testing.T) {
	n := testkit.NewNATS(t)
	n.Stop(t)
	p := publisher(t)
	err := send(t, p, target(n, "events.acme", ""), message("evt-1", "att_1"))
	if err == nil || !strings.HasPrefix(err.Error(), "nats: connect:") {
		t.Fatalf("err = %v", err)
	}
	if p.Conns() != 0 {
		t.Fatalf("%d connections kept", p.Conns())
	}
}

// trusting is a TLS configuration whose roots are ca's certificate alone.
func trusting(t testing.TB, ca testkit.Cert) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.CertPEM) {
		t.Fatal("no CA certificate")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// A tls:// destination on a server whose certificate the publisher's CA
// signed: the event lands once in the stream, with Nats-Msg-Id = ce-id,
// however often it is sent.
func TestPublish_OverTLSWithTheCATrustedLandsOnceWithMsgID(t *testing.T) {
	pki := testkit.NewPKI(t)
	n := testkit.NewNATSTLS(t, pki, "hub", "s3cret")
	if !strings.HasPrefix(n.URL, "tls://") {
		t.Fatalf("URL %s", n.URL)
	}
	n.CreateStream(t, "EVENTS", "events.>")
	p := publisherWithTLS(t, trusting(t, pki.CA))
	m := sendTwiceLandsOnce(t, n, p)
	if got := m.Header.Get("Nats-Msg-Id"); got != "evt-1" || got != m.Header.Get("ce-id") {
		t.Fatalf("Nats-Msg-Id %q, ce-id %q", got, m.Header.Get("ce-id"))
	}
	if p.Conns() != 1 {
		t.Fatalf("%d connections", p.Conns())
	}
}

// A server whose certificate no trusted CA signed fails the attempt at
// connecting, saying so, and nothing reaches the stream: neither with the
// system roots nor with another CA.
func TestPublish_OverTLSAnUntrustedCertificateFails(t *testing.T) {
	pki := testkit.NewPKI(t)
	n := testkit.NewNATSTLS(t, pki)
	n.CreateStream(t, "EVENTS", "events.>")
	for name, base := range map[string]*tls.Config{
		"system roots": nil,
		"another CA":   trusting(t, testkit.NewPKI(t).CA),
	} {
		t.Run(name, func(t *testing.T) {
			p := publisherWithTLS(t, base)
			err := send(t, p, target(n, "events.acme", "EVENTS"), message("evt-1", "att_1"))
			if err == nil || destination.Describe(err) != "tls: certificate signed by unknown authority" {
				t.Fatalf("err = %v", err)
			}
			if p.Conns() != 0 {
				t.Fatalf("%d connections kept", p.Conns())
			}
		})
	}
	if got := len(n.Messages(t, "EVENTS")); got != 0 {
		t.Fatalf("%d messages stored", got)
	}
}

// sendTwiceLandsOnce sends evt-1 to events.acme (stream EVENTS) twice, as
// two attempts of one event, and returns the one message the stream keeps
// (the redelivery de-duplicated by Nats-Msg-Id).
func sendTwiceLandsOnce(t *testing.T, n *testkit.NATS, p *nats.Publisher) *jetstream.RawStreamMsg {
	t.Helper()
	tg := target(n, "events.acme", "EVENTS")
	for _, att := range []string{"att_1", "att_2"} {
		if err := send(t, p, tg, message("evt-1", att)); err != nil {
			t.Fatal(err)
		}
	}
	msgs := n.Messages(t, "EVENTS")
	if len(msgs) != 1 {
		t.Fatalf("%d messages in the stream, want 1 (the redelivery de-duplicated)", len(msgs))
	}
	m := msgs[0]
	if m.Subject != "events.acme" || string(m.Data) != `{"id":"evt-1"}` {
		t.Fatalf("message %s %s", m.Subject, m.Data)
	}
	return m
}
