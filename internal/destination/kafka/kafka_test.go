package kafka_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/kafka"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func producer(t *testing.T, caCert []byte, allowPrivate bool) *kafka.Producer {
	t.Helper()
	d := destination.NewDialer(destination.DialOptions{AllowPrivate: allowPrivate})
	p, err := kafka.New(kafka.Options{Dial: d.DialContext, Timeout: testkit.Scaled(3 * time.Second), CACert: caCert})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func send(p *kafka.Producer, tg destination.Target) error {
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	return p.Send(ctx, tg, destination.Message{ID: "evt-1", EventType: "transaction.posted", TenantID: "acme",
		ContentType: "application/json", Body: []byte(`{}`), Headers: http.Header{"ce-id": {"evt-1"}}}).Err
}

// TLS with SCRAM-SHA-512 through kafkasec over the SSRF-safe dialer: a
// broker whose CA is trusted gets the record; one signed by a CA the
// producer does not trust (the system roots, in the hub) is refused.
func TestSend_TLSAndSASLAndAnUntrustedBroker(t *testing.T) {
	testkit.Long(t)
	pki := testkit.NewPKI(t)
	cluster := testkit.KafkaWith(t, 1, []string{"t"}, kfake.TLS(pki.ServerTLS(false)),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "acme", "pw"))
	tg := destination.Target{
		Destination: hub.Destination{Type: hub.DestinationKafka, Brokers: cluster.ListenAddrs(), Topic: "t", TLS: true,
			SASLMechanism: "SCRAM-SHA-512", SASLUsername: "acme"},
		Credentials: hub.Credentials{Password: "pw"},
	}
	if err := send(producer(t, pki.CA.CertPEM, true), tg); err != nil {
		t.Fatalf("TLS + SCRAM to a trusted broker: %v", err)
	}
	recs := testkit.ReadRecords(t, cluster, "t", 1, kgo.DialTLSConfig(pki.ClientTLS()),
		kgo.SASL(scram.Auth{User: "acme", Pass: "pw"}.AsSha512Mechanism()))
	if string(recs[0].Key) != "acme" {
		t.Fatalf("record key %q", recs[0].Key)
	}
	if err := send(producer(t, nil, true), tg); err == nil {
		t.Fatal("a broker signed by an untrusted CA was accepted")
	}
	if err := send(producer(t, pki.CA.CertPEM, false), tg); err == nil || !strings.Contains(err.Error(), "private") {
		t.Fatalf("a broker on 127.0.0.1 without private sinks: %v, want refused", err)
	}
}

// A destination moved to other brokers (or given a new password, or
// deleted) leaves its old client behind: it is closed once idle for
// destination.IdleAfter, and a later send to the old brokers opens a new one.
func TestSend_AnIdleClientIsClosedAndReopenedWhenNeeded(t *testing.T) {
	testkit.Long(t)
	clock := testkit.NewClock()
	d := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	p, err := kafka.New(kafka.Options{Dial: d.DialContext, Timeout: testkit.Scaled(3 * time.Second), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	oldBrokers, newBrokers := testkit.KafkaWith(t, 1, []string{"t"}), testkit.KafkaWith(t, 1, []string{"t"})
	at := func(c *kfake.Cluster) destination.Target {
		return destination.Target{Destination: hub.Destination{Type: hub.DestinationKafka, Brokers: c.ListenAddrs(), Topic: "t"}}
	}
	if err := send(p, at(oldBrokers)); err != nil {
		t.Fatal(err)
	}
	clock.Advance(destination.IdleAfter + time.Second)
	if err := send(p, at(newBrokers)); err != nil {
		t.Fatal(err)
	}
	if n := p.Clients(); n != 1 {
		t.Fatalf("%d clients open, want only the new brokers'", n)
	}
	if err := send(p, at(oldBrokers)); err != nil {
		t.Fatalf("the old brokers after their client was closed: %v", err)
	}
	if n := p.Clients(); n != 2 {
		t.Fatalf("%d clients open, want 2", n)
	}
	if got := testkit.ReadRecords(t, oldBrokers, "t", 2); len(got) != 2 {
		t.Fatalf("old brokers got %d records", len(got))
	}
}

// A destination's cluster replaced behind the same address (new topic
// ids: franz-go's client would fail UNKNOWN_TOPIC_ID for good), then its
// topic deleted and created again: the attempt that meets the change may
// fail, the next one dials a new client and is delivered, with no restart.
func TestSend_AClusterReplacedOrATopicRecreatedIsDeliveredToAgain(t *testing.T) {
	testkit.Long(t)
	k := testkit.NewReplaceableKafka(t, 1, []string{"t"})
	p := producer(t, nil, true)
	tg := destination.Target{Destination: hub.Destination{Type: hub.DestinationKafka, Brokers: []string{k.Addr}, Topic: "t"}}
	if err := send(p, tg); err != nil {
		t.Fatal(err)
	}
	// Within two attempts: the first may meet the old client's view.
	deliveredAgain := func(what string) {
		t.Helper()
		err := send(p, tg)
		if err != nil {
			t.Logf("%s: the attempt that met it failed: %v", what, err)
			if err = send(p, tg); err != nil {
				t.Fatalf("%s: the next attempt failed too: %v", what, err)
			}
		}
		if got := testkit.ReadRecords(t, k.Cluster(), "t", 1); len(got) != 1 || string(got[0].Key) != "acme" {
			t.Fatalf("%s: the topic holds %d records, want the one delivered", what, len(got))
		}
	}
	k.Replace()
	deliveredAgain("the cluster replaced")

	adm := kadm.NewClient(testkit.Producer(t, k.Cluster()))
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	if _, err := adm.DeleteTopic(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	deliveredAgain("the topic deleted and created again")
	if n := p.Clients(); n != 1 {
		t.Fatalf("%d clients kept, want the one in use", n)
	}
}

// A topic that does not exist: with AutoCreateTopics (dev mode) the
// broker makes it on the first record, which is delivered; without, the
// attempt fails and no topic is made.
func TestSend_AutoCreateTopicsMakesTheTopicInDevOnly(t *testing.T) {
	testkit.Long(t)
	cluster := testkit.KafkaWith(t, 1, []string{"t"}) // it allows auto-creation, as dev's broker
	d := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	at := destination.Target{Destination: hub.Destination{Type: hub.DestinationKafka, Brokers: cluster.ListenAddrs(), Topic: "made.on.first.record"}}
	strict, err := kafka.New(kafka.Options{Dial: d.DialContext, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { strict.Close() })
	if err := send(strict, at); err == nil {
		t.Fatal("a record to a missing topic was delivered without AutoCreateTopics")
	}
	dev, err := kafka.New(kafka.Options{Dial: d.DialContext, Timeout: testkit.Scaled(3 * time.Second), AutoCreateTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	if err := send(dev, at); err != nil {
		t.Fatalf("with AutoCreateTopics: %v", err)
	}
	if got := testkit.ReadRecords(t, cluster, "made.on.first.record", 1); len(got) != 1 {
		t.Fatalf("the new topic holds %d records", len(got))
	}
}
