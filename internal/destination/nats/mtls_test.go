package nats_test

import (
	"strings"
	"testing"
	"time"

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
