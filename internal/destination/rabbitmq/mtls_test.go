package rabbitmq_test

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// handshake is what a TLS server saw of one client: the verified chain's
// leaf, or why the handshake failed.
type handshake struct {
	leaf []byte // DER of the verified client certificate
	cn   string
	err  error
}

// mtlsListener is a TLS server of pki's CA that requires and verifies a
// client certificate of that CA, reports each handshake and closes the
// connection: no AMQP follows, so every attempt fails after the TLS
// handshake, which is what is tested.
func mtlsListener(t *testing.T, pki *testkit.PKI) (string, <-chan handshake) {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", pki.ServerTLS(true))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	seen := make(chan handshake, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			tc := c.(*tls.Conn)
			h := handshake{err: tc.HandshakeContext(t.Context())}
			if h.err == nil {
				if st := tc.ConnectionState(); len(st.VerifiedChains) > 0 {
					h.leaf, h.cn = st.VerifiedChains[0][0].Raw, st.VerifiedChains[0][0].Subject.CommonName
				}
			}
			c.Close()
			select {
			case seen <- h:
			default:
			}
		}
	}()
	return fmt.Sprintf("amqps://%s/", l.Addr().(*net.TCPAddr)), seen
}

// next is the next handshake the server saw.
func next(t *testing.T, seen <-chan handshake) handshake {
	t.Helper()
	select {
	case h := <-seen:
		return h
	case <-time.After(testkit.Patience):
		t.Fatal("the server saw no connection")
		return handshake{}
	}
}

// An amqps:// destination presents its client certificate in the TLS
// handshake (the broker verifies it against its CA) and trusts the
// broker's private certificate through its ca_certificates; a certificate
// of another CA is refused by the broker's handshake.
func TestPublish_AMQPSPresentsTheDestinationsClientCertificate(t *testing.T) {
	pki, other := testkit.NewPKI(t), testkit.NewPKI(t)
	url, seen := mtlsListener(t, pki)
	at := func(c testkit.Cert) destination.Target {
		return destination.Target{
			Destination: hub.Destination{Type: hub.DestinationRabbitMQ, URL: url, Exchange: "events",
				CACertificates: string(pki.CA.CertPEM), ClientCertificate: string(c.CertPEM)},
			Credentials: hub.Credentials{Username: "guest", Password: "guest"},
			ClientKey:   string(c.KeyPEM),
		}
	}

	err := send(t, publisher(t, "mtls"), at(pki.Client), message("evt-1", "att_1"))
	if err == nil {
		t.Fatal("published to a server that speaks no AMQP")
	}
	h := next(t, seen)
	if h.err != nil || !bytes.Equal(h.leaf, pki.Client.TLS.Certificate[0]) || h.cn != "streaming-hub" {
		t.Fatalf("the server saw %+v, want the destination's client certificate verified (the attempt: %v)", h, err)
	}
	t.Logf("verified %q; the attempt then failed: %v", h.cn, err)

	err = send(t, publisher(t, "mtls-other"), at(other.Client), message("evt-2", "att_2"))
	if err == nil {
		t.Fatal("published with another CA's client certificate")
	}
	if h := next(t, seen); h.err == nil || h.leaf != nil {
		t.Fatalf("another CA's client certificate: the server saw %+v, want its handshake failed", h)
	} else {
		t.Logf("another CA's: the server refused (%v); the attempt: %v", h.err, err)
	}
}
