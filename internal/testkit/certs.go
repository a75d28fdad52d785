package testkit

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Cert is a certificate and its key, in PEM and as files.
type Cert struct {
	CertPEM, KeyPEM   []byte
	CertFile, KeyFile string
	TLS               tls.Certificate
	x509              *x509.Certificate
	key               *ecdsa.PrivateKey
}

// PKI is what a TLS test needs, generated for the test: a CA, a server
// certificate it signed for 127.0.0.1, ::1 and localhost, another valid
// only for the name kafka.test (a broker reached by an address its
// certificate does not hold), and a client certificate it signed.
type PKI struct {
	CA, Server, NamedServer, Client Cert
}

// NewPKI generates a CA and the certificates it signs, written under a
// temporary directory.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	ca := newCert(t, dir, "ca", &x509.Certificate{
		Subject:               pkix.Name{CommonName: "streaming-hub test CA"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, nil)
	server := newCert(t, dir, "server", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, &ca)
	named := newCert(t, dir, "named-server", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kafka.test"},
		DNSNames:    []string{"kafka.test"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, &ca)
	client := newCert(t, dir, "client", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "streaming-hub"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, &ca)
	return &PKI{CA: ca, Server: server, NamedServer: named, Client: client}
}

// ServerTLS is the broker's TLS configuration with the Server certificate;
// requireClient demands a client certificate signed by the CA (mutual TLS).
func (p *PKI) ServerTLS(requireClient bool) *tls.Config {
	return p.ServerTLSWith(p.Server, requireClient)
}

// ServerTLSWith is ServerTLS presenting cert.
func (p *PKI) ServerTLSWith(cert Cert, requireClient bool) *tls.Config {
	c := &tls.Config{Certificates: []tls.Certificate{cert.TLS}, MinVersion: tls.VersionTLS12}
	if requireClient {
		pool := x509.NewCertPool()
		pool.AddCert(p.CA.x509)
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c
}

// ClientTLS is a client configuration trusting the CA, presenting the
// client certificate.
func (p *PKI) ClientTLS() *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(p.CA.x509)
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{p.Client.TLS}, MinVersion: tls.VersionTLS12}
}

// ClientCertValid is another client certificate the CA signs, valid from
// notBefore to notAfter (an expired one, one about to expire).
func (p *PKI) ClientCertValid(t testing.TB, notBefore, notAfter time.Time) Cert {
	t.Helper()
	return newCert(t, t.TempDir(), "client", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "streaming-hub"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		NotBefore:   notBefore, NotAfter: notAfter,
	}, &p.CA)
}

var serial atomic.Int64

func newCert(t testing.TB, dir, name string, tmpl *x509.Certificate, parent *Cert) Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(serial.Add(1))
	if tmpl.NotAfter.IsZero() {
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.x509, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := Cert{
		CertPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		CertFile: filepath.Join(dir, name+".crt"),
		KeyFile:  filepath.Join(dir, name+".key"),
		key:      key,
	}
	if c.x509, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	if c.TLS, err = tls.X509KeyPair(c.CertPEM, c.KeyPEM); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.CertFile, c.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.KeyFile, c.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}
