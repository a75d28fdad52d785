package nats_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A tls:// destination's own ca_certificates (not the driver's) make a
// server of a private CA trusted, with a client certificate configured
// (this server does not demand one: the webhook tests cover refusal); an
// expired certificate fails the attempt before connecting.
func TestNATSDestinationTLS_OwnCAsAndClientCertificate(t *testing.T) {
	pki := testkit.NewPKI(t)
	n := testkit.NewNATSTLS(t, pki)
	n.CreateStream(t, "EVENTS", "events.>")
	p := publisherWithTLS(t, nil) // the system roots, unless the destination says otherwise
	tg := target(n, "events.acme", "EVENTS")
	if err := send(t, p, tg, message("evt-1", "att_1")); err == nil || !strings.Contains(err.Error(), "unknown authority") {
		t.Fatalf("without ca_certificates: %v", err)
	}
	tg.CACertificates = string(pki.CA.CertPEM)
	tg.ClientCertificate, tg.ClientKey = string(pki.Client.CertPEM), string(pki.Client.KeyPEM)
	if err := send(t, p, tg, message("evt-2", "att_2")); err != nil {
		t.Fatalf("with the destination's CA and client certificate: %v", err)
	}
	notAfter := time.Now().Add(-time.Minute).Truncate(time.Second)
	expired := pki.ClientCertValid(t, notAfter.Add(-time.Hour), notAfter)
	tg.ClientCertificate, tg.ClientKey = string(expired.CertPEM), string(expired.KeyPEM)
	if err := send(t, p, tg, message("evt-3", "att_3")); err == nil || err.Error() != "client certificate expired at "+notAfter.UTC().Format(time.RFC3339) {
		t.Fatalf("an expired certificate: %v", err)
	}
}

// A server that requires a client certificate of its CA (--tlsverify)
// gets the message from a destination with that CA's certificate, and
// refuses one with no client certificate or another CA's: nothing else
// lands in the stream.
func TestNATSDestinationTLS_AServerRequiringAClientCertificateGetsTheDestinations(t *testing.T) {
	pki, other := testkit.NewPKI(t), testkit.NewPKI(t)
	n := testkit.NewNATSMutualTLS(t, pki)
	n.CreateStream(t, "EVENTS", "events.>")
	p := publisherWithTLS(t, nil)
	at := func(cert, key []byte) destination.Target {
		tg := target(n, "events.acme", "EVENTS")
		tg.CACertificates = string(pki.CA.CertPEM)
		tg.ClientCertificate, tg.ClientKey = string(cert), string(key)
		return tg
	}
	if err := send(t, p, at(pki.Client.CertPEM, pki.Client.KeyPEM), message("evt-1", "att_1")); err != nil {
		t.Fatalf("with the client certificate of the server's CA: %v", err)
	}
	for name, tg := range map[string]destination.Target{
		"no client certificate":           at(nil, nil),
		"another CA's client certificate": at(other.Client.CertPEM, other.Client.KeyPEM),
	} {
		err := send(t, p, tg, message("evt-2", "att_2"))
		// The server's alert, or (when the client writes first) the
		// connection it closed after the handshake.
		if err == nil || !strings.Contains(err.Error(), "tls") {
			t.Errorf("%s: %v, want the TLS connection refused", name, err)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
	msgs := n.Messages(t, "EVENTS")
	if len(msgs) != 1 || msgs[0].Header.Get("Nats-Msg-Id") != "evt-1" {
		t.Fatalf("the stream holds %d messages, want evt-1 alone", len(msgs))
	}
}
