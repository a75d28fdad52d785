package webhook

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// mtlsServer is an https receiver that demands a client certificate its
// CA signed (and presents a server certificate of that private CA);
// maxVersion 0 is TLS 1.3.
func mtlsServer(t *testing.T, pki *testkit.PKI, maxVersion uint16) (*httptest.Server, *int) {
	t.Helper()
	var delivered int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no client certificate", http.StatusForbidden)
			return
		}
		delivered++
		w.WriteHeader(http.StatusNoContent)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	srv.TLS = pki.ServerTLS(true)
	srv.TLS.MaxVersion = maxVersion
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &delivered
}

func sendTo(t *testing.T, d hub.Destination, key string) destination.Result {
	t.Helper()
	r := destination.NewRegistry(5*time.Second, map[string]destination.Driver{
		hub.DestinationWebhook: New(destination.NewDialer(destination.DialOptions{AllowPrivate: true}))})
	t.Cleanup(func() { r.Close() })
	d.Type = hub.DestinationWebhook
	return r.Send(context.Background(), destination.Target{Destination: d, ClientKey: key, Secrets: []string{destination.NewSecret()}},
		destination.Message{ID: "evt-1", ContentType: "application/json", Body: []byte(`{}`), Time: time.Now(), Headers: http.Header{}})
}

// A receiver that demands a client certificate of its CA gets the
// subscription's; one without a certificate, or with another CA's, is
// refused by it; ca_certificates is what makes its private server
// certificate trusted.
func TestWebhookMutualTLS_DeliversWithTheClientCertificateOfTheReceiversCA(t *testing.T) {
	pki, other := testkit.NewPKI(t), testkit.NewPKI(t)
	srv, delivered := mtlsServer(t, pki, 0)
	ca := string(pki.CA.CertPEM)

	res := sendTo(t, hub.Destination{URL: srv.URL, ClientCertificate: string(pki.Client.CertPEM), CACertificates: ca}, string(pki.Client.KeyPEM))
	if res.Err != nil || res.Status != http.StatusNoContent || *delivered != 1 {
		t.Fatalf("with the receiver's CA's client certificate: %+v, delivered %d", res, *delivered)
	}
	for name, d := range map[string]struct {
		dest hub.Destination
		key  string
	}{
		"no client certificate":   {hub.Destination{URL: srv.URL, CACertificates: ca}, ""},
		"another CA's":            {hub.Destination{URL: srv.URL, ClientCertificate: string(other.Client.CertPEM), CACertificates: ca}, string(other.Client.KeyPEM)},
		"no ca_certificates":      {hub.Destination{URL: srv.URL, ClientCertificate: string(pki.Client.CertPEM)}, string(pki.Client.KeyPEM)},
		"another CA as the roots": {hub.Destination{URL: srv.URL, ClientCertificate: string(pki.Client.CertPEM), CACertificates: string(other.CA.CertPEM)}, string(pki.Client.KeyPEM)},
	} {
		res := sendTo(t, d.dest, d.key)
		if res.Err == nil {
			t.Errorf("%s: delivered (%+v)", name, res)
			continue
		}
		t.Logf("%s: %v", name, res.Err)
	}
	if *delivered != 1 {
		t.Fatalf("delivered %d times", *delivered)
	}
	if res := sendTo(t, hub.Destination{URL: srv.URL, ClientCertificate: string(pki.Client.CertPEM)}, string(pki.Client.KeyPEM)); !strings.Contains(res.Err.Error(), "unknown authority") {
		t.Errorf("without ca_certificates the private server certificate is not trusted: got %v", res.Err)
	}
}

// tls_min_version "1.3" refuses a receiver that speaks TLS 1.2 at most;
// the default (1.2) reaches it.
func TestWebhookMutualTLS_MinVersion13RefusesATLS12Receiver(t *testing.T) {
	pki := testkit.NewPKI(t)
	srv, delivered := mtlsServer(t, pki, tls.VersionTLS12)
	d := hub.Destination{URL: srv.URL, ClientCertificate: string(pki.Client.CertPEM), CACertificates: string(pki.CA.CertPEM)}
	if res := sendTo(t, d, string(pki.Client.KeyPEM)); res.Err != nil {
		t.Fatalf("TLS 1.2 by default: %v", res.Err)
	}
	d.TLSMinVersion = hub.TLSVersion13
	res := sendTo(t, d, string(pki.Client.KeyPEM))
	if res.Err == nil || *delivered != 1 {
		t.Fatalf("tls_min_version 1.3 to a TLS 1.2 receiver: %+v, delivered %d", res, *delivered)
	}
	t.Logf("refused: %v", res.Err)
}

// An expired client certificate fails the attempt before any connection,
// saying when it expired.
func TestWebhookMutualTLS_ExpiredCertificateFailsWithItsDate(t *testing.T) {
	pki := testkit.NewPKI(t)
	srv, delivered := mtlsServer(t, pki, 0)
	notAfter := time.Now().Add(-time.Hour).Truncate(time.Second)
	expired := pki.ClientCertValid(t, notAfter.Add(-24*time.Hour), notAfter)
	res := sendTo(t, hub.Destination{URL: srv.URL, ClientCertificate: string(expired.CertPEM), CACertificates: string(pki.CA.CertPEM)}, string(expired.KeyPEM))
	want := "client certificate expired at " + notAfter.UTC().Format(time.RFC3339)
	if res.Err == nil || res.Err.Error() != want || *delivered != 0 {
		t.Fatalf("got %v, want %q (delivered %d)", res.Err, want, *delivered)
	}
}
