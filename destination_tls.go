package hub

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// TLS versions a destination may ask for as its lowest
// (destination.tls_min_version).
const (
	TLSVersion12 = "1.2"
	TLSVersion13 = "1.3"
)

// Limits of a destination's TLS material.
const (
	MaxCertificatePEMBytes = 64 << 10 // client_certificate, client_key, ca_certificates each
	// CertificateExpiringWithin is how long before its expiry a client
	// certificate counts as expiring (for the operational event
	// hub.subscription.certificate_expiring).
	CertificateExpiringWithin = 14 * 24 * time.Hour
)

// SpeaksTLS reports whether the destination's connections are TLS: an
// https webhook, an amqps:// RabbitMQ, a tls:// NATS server, Kafka with
// tls. Only those may carry a client certificate, CAs or a TLS version.
func (d Destination) SpeaksTLS() bool {
	switch d.Type {
	case DestinationKafka:
		return d.TLS
	case DestinationWebhook, DestinationRabbitMQ, DestinationNATS:
		u, err := url.Parse(d.URL)
		if err != nil {
			return false
		}
		switch strings.ToLower(u.Scheme) {
		case "https", "amqps", "tls":
			return true
		}
	}
	return false
}

// HasTLSSettings reports whether the destination sets any of its TLS
// fields (else the system roots, TLS 1.2 and no client certificate).
func (d Destination) HasTLSSettings() bool {
	return d.ClientCertificate != "" || d.CACertificates != "" || d.TLSMinVersion != ""
}

// TLSMinVersionID is the crypto/tls constant of TLSMinVersion.
func (d Destination) TLSMinVersionID() uint16 {
	if d.TLSMinVersion == TLSVersion13 {
		return tls.VersionTLS13
	}
	return tls.VersionTLS12
}

// ClientCertificateInfo is what answers show of a client certificate:
// the hex SHA-256 of its leaf's DER and when it expires. ok is false when
// certPEM holds no certificate.
func ClientCertificateInfo(certPEM string) (sha256Hex string, notAfter time.Time, ok bool) {
	leaf, err := parseLeaf(certPEM)
	if err != nil {
		return "", time.Time{}, false
	}
	sum := sha256.Sum256(leaf.Raw)
	return hex.EncodeToString(sum[:]), leaf.NotAfter, true
}

func parseLeaf(certPEM string) (*x509.Certificate, error) {
	rest := []byte(certPEM)
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("no PEM CERTIFICATE block")
		}
		if b.Type == "CERTIFICATE" {
			return x509.ParseCertificate(b.Bytes)
		}
	}
}

// ValidateDestinationTLS checks a destination's TLS fields and its client
// key: only on a destination that speaks TLS; a client certificate that
// parses, is valid at now (unless now is zero: a stored certificate may
// expire, and the subscription must stay editable) and comes with the key
// that matches it; CAs that parse; "1.2" or "1.3". Errors name the field.
func ValidateDestinationTLS(d Destination, clientKey string, now time.Time) error {
	if !d.HasTLSSettings() && clientKey == "" {
		return nil
	}
	if !d.SpeaksTLS() {
		field := "destination.client_certificate"
		switch {
		case d.ClientCertificate == "" && clientKey != "":
			field = "destination.client_key"
		case d.ClientCertificate == "" && d.CACertificates != "":
			field = "destination.ca_certificates"
		case d.ClientCertificate == "" && d.CACertificates == "":
			field = "destination.tls_min_version"
		}
		return Errorf(EINVALID, "%s: only for destinations that speak TLS (an https webhook, amqps://, tls:// or kafka with tls true)", field)
	}
	switch d.TLSMinVersion {
	case "", TLSVersion12, TLSVersion13:
	default:
		return Errorf(EINVALID, `destination.tls_min_version: must be "1.2" or "1.3"`)
	}
	if d.CACertificates != "" {
		if len(d.CACertificates) > MaxCertificatePEMBytes {
			return Errorf(EINVALID, "destination.ca_certificates: at most %d bytes", MaxCertificatePEMBytes)
		}
		if _, err := CertPool(d.CACertificates); err != nil {
			return Errorf(EINVALID, "destination.ca_certificates: %v", err)
		}
	}
	switch {
	case d.ClientCertificate == "" && clientKey == "":
		return nil
	case d.ClientCertificate == "":
		return Errorf(EINVALID, "destination.client_certificate: required with client_key")
	case clientKey == "":
		return Errorf(EINVALID, "destination.client_key: required with client_certificate")
	case len(d.ClientCertificate) > MaxCertificatePEMBytes:
		return Errorf(EINVALID, "destination.client_certificate: at most %d bytes", MaxCertificatePEMBytes)
	case len(clientKey) > MaxCertificatePEMBytes:
		return Errorf(EINVALID, "destination.client_key: at most %d bytes", MaxCertificatePEMBytes)
	}
	leaf, err := parseLeaf(d.ClientCertificate)
	if err != nil {
		return Errorf(EINVALID, "destination.client_certificate: not a PEM X.509 certificate")
	}
	if !now.IsZero() && !now.Before(leaf.NotAfter) {
		return Errorf(EINVALID, "destination.client_certificate: expired at %s", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if !now.IsZero() && now.Before(leaf.NotBefore) {
		return Errorf(EINVALID, "destination.client_certificate: not valid before %s", leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	if b, _ := pem.Decode([]byte(clientKey)); b == nil || !strings.Contains(b.Type, "PRIVATE KEY") {
		return Errorf(EINVALID, "destination.client_key: not a PEM private key")
	}
	if _, err := tls.X509KeyPair([]byte(d.ClientCertificate), []byte(clientKey)); err != nil {
		if strings.Contains(err.Error(), "does not match") {
			return Errorf(EINVALID, "destination.client_key: does not match client_certificate")
		}
		return Errorf(EINVALID, "destination.client_key: not a usable private key for client_certificate")
	}
	return nil
}

// CertPool is a pool of the certificates in a PEM bundle; a bundle with
// no certificate, or one that does not parse, is an error.
func CertPool(bundle string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	rest, n := []byte(bundle), 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d does not parse", n+1)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return pool, nil
}
