package kafka_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A broker that requires a client certificate of its CA gets the record
// from a destination with that CA's client certificate (and the broker's
// CA as ca_certificates); a certificate of another CA, or none, is
// refused by the broker and the attempt fails.
func TestSend_MutualTLSPresentsTheDestinationsClientCertificate(t *testing.T) {
	testkit.Long(t)
	pki, other := testkit.NewPKI(t), testkit.NewPKI(t)
	cluster := testkit.KafkaWith(t, 1, []string{"t"}, kfake.TLS(pki.ServerTLS(true)))
	at := func(cert, key []byte) destination.Target {
		return destination.Target{
			Destination: hub.Destination{Type: hub.DestinationKafka, Brokers: cluster.ListenAddrs(), Topic: "t", TLS: true,
				CACertificates: string(pki.CA.CertPEM), ClientCertificate: string(cert)},
			ClientKey: string(key),
		}
	}
	// The driver trusts no CA of its own: the destination's CAs are what
	// make the broker's private certificate trusted.
	if err := send(producer(t, nil, true), at(pki.Client.CertPEM, pki.Client.KeyPEM)); err != nil {
		t.Fatalf("with the client certificate of the broker's CA: %v", err)
	}
	recs := testkit.ReadRecords(t, cluster, "t", 1, kgo.DialTLSConfig(pki.ClientTLS()))
	if len(recs) != 1 || string(recs[0].Key) != "acme" {
		t.Fatalf("records %+v", recs)
	}
	// The broker's alert is usually what the attempt reports; with TLS 1.3
	// it can come after the client's handshake is over, as a connection
	// closed, so only the failure is asserted.
	for name, tg := range map[string]destination.Target{
		"another CA's client certificate": at(other.Client.CertPEM, other.Client.KeyPEM),
		"no client certificate":           at(nil, nil),
	} {
		err := send(producer(t, nil, true), tg)
		if err == nil {
			t.Errorf("%s: delivered", name)
			continue
		}
		t.Logf("%s: %v", name, err)
	}
}
