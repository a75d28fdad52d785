package destination

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// TLSConfig is the TLS a target's connections use when it sets any of its
// mutual TLS fields (docs/receivers.md#mutual-tls-and-fixed-egress): its
// client certificate and key, its CAs instead of the system roots, its
// lowest version. nil (and no error) when it sets none: the driver's
// default applies (the system roots, TLS 1.2). ServerName is left to the
// driver (the host dialed). A client certificate expired at now fails
// here, before any connection: a receiver would refuse it anyway, with a
// less clear alert.
func TLSConfig(t Target, now time.Time) (*tls.Config, error) {
	if !t.HasTLSSettings() {
		return nil, nil
	}
	c := &tls.Config{MinVersion: t.TLSMinVersionID()}
	if t.CACertificates != "" {
		pool, err := hub.CertPool(t.CACertificates)
		if err != nil {
			return nil, fmt.Errorf("ca_certificates: %v", err)
		}
		c.RootCAs = pool
	}
	if t.ClientCertificate != "" {
		cert, err := tls.X509KeyPair([]byte(t.ClientCertificate), []byte(t.ClientKey))
		if err != nil {
			return nil, fmt.Errorf("client certificate: unusable with its key: %v", err)
		}
		if !now.Before(cert.Leaf.NotAfter) {
			return nil, ExpiredCertificateError{At: cert.Leaf.NotAfter.UTC()}
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// TLSKey names a target's TLS settings, for the pools of connections and
// clients: "" for none, else a hash of the certificate, key, CAs and
// version (never the key itself).
func TLSKey(t Target) string {
	if !t.HasTLSSettings() {
		return ""
	}
	h := sha256.New()
	for _, s := range []string{t.ClientCertificate, t.ClientKey, t.CACertificates, t.TLSMinVersion} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ExpiredCertificateError fails an attempt whose client certificate has
// expired: its text, with the date, is what the tenant reads.
type ExpiredCertificateError struct{ At time.Time }

func (e ExpiredCertificateError) Error() string {
	return "client certificate expired at " + e.At.Format(time.RFC3339)
}
