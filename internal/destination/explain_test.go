package destination_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/kafka"
	"github.com/lerianstudio/streaming-hub/internal/destination/nats"
	"github.com/lerianstudio/streaming-hub/internal/destination/rabbitmq"
	"github.com/lerianstudio/streaming-hub/internal/destination/webhook"
)

// resolverAddrs are the nameservers of this machine: the hub's resolver,
// which Go's DNS errors name ("lookup x.invalid on 10.0.0.53:53").
func resolverAddrs(t *testing.T) []string {
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		t.Logf("no /etc/resolv.conf: %v", err)
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "nameserver" {
			out = append(out, f[1])
		}
	}
	return out
}

// refusedPort is a loopback port nothing listens on.
func refusedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	return port
}

// loopbackNames resolves every name to 127.0.0.1: a name the tenant
// wrote whose address they did not.
type loopbackNames struct{}

func (loopbackNames) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if strings.HasSuffix(host, ".invalid") {
		return net.DefaultResolver.LookupNetIP(ctx, network, host)
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

var ipPattern = regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}\b|\[?[0-9a-fA-F]*:[0-9a-fA-F]*:[0-9a-fA-F:.]*\]?`)

// TestExplain_NamesTheDestinationAsWrittenNeverAnAddressOrTheResolver:
// every failure of a send we can provoke on loopback (a refused port, a
// name that does not resolve, a private address blocked, an unknown
// certificate authority, a receiver that never answers, a broker that
// refuses the connection) reads, through the one send path, as what
// failed with the host the tenant wrote: never an address it resolved to,
// nor the hub's resolver.
func TestExplain_NamesTheDestinationAsWrittenNeverAnAddressOrTheResolver(t *testing.T) {
	const timeout = 2 * time.Second
	resolvers := resolverAddrs(t)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(2 * timeout):
		}
	}))
	defer hang.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsSrv.Close()
	_, hangPort, _ := net.SplitHostPort(hang.Listener.Addr().String())
	_, tlsPort, _ := net.SplitHostPort(tlsSrv.Listener.Addr().String())
	refused := refusedPort(t)

	registry := func(allowPrivate bool) *destination.Registry {
		d := destination.NewDialer(destination.DialOptions{AllowPrivate: allowPrivate, Resolver: loopbackNames{}})
		rmq, err := rabbitmq.New(rabbitmq.Options{Dial: d.DialContext})
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.New(nats.Options{Dial: d.DialContext})
		if err != nil {
			t.Fatal(err)
		}
		kc, err := kafka.New(kafka.Options{Dial: d.DialContext, Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		r := destination.NewRegistry(timeout, map[string]destination.Driver{
			hub.DestinationWebhook: webhook.New(d), hub.DestinationRabbitMQ: rmq,
			hub.DestinationNATS: nc, hub.DestinationKafka: kc})
		t.Cleanup(func() { r.Close() })
		return r
	}
	open, blocked := registry(true), registry(false)
	webhookTo := func(u string) hub.Destination { return hub.Destination{Type: hub.DestinationWebhook, URL: u} }
	for _, c := range []struct {
		name    string
		r       *destination.Registry
		dest    hub.Destination
		want    string // the whole text
		literal string // an address the tenant wrote, which may show
	}{
		{"webhook, refused port", open, webhookTo("http://sink.example.com:" + refused + "/hook"),
			"connect: connection refused by sink.example.com:" + refused, ""},
		{"webhook, refused port of an address written", open, webhookTo("http://127.0.0.1:" + refused + "/hook"),
			"connect: connection refused by 127.0.0.1:" + refused, "127.0.0.1"},
		{"webhook, no such host", open, webhookTo("https://nowhere.invalid/hook"),
			"dns: no such host nowhere.invalid", ""},
		{"webhook, a private address blocked", blocked, webhookTo("https://sink.example.com/hook"),
			"destination sink.example.com resolves to a private address (blocked)", ""},
		{"webhook, unknown certificate authority", open, webhookTo("https://sink.example.com:" + tlsPort + "/hook"),
			"tls: certificate signed by unknown authority", ""},
		{"webhook, a receiver that never answers", open, webhookTo("http://sink.example.com:" + hangPort + "/hook"),
			"timeout after 2s", ""},
		{"rabbitmq, refused port", open, hub.Destination{Type: hub.DestinationRabbitMQ, URL: "amqp://mq.example.com:" + refused + "/", Exchange: "x"},
			"connect: connection refused by mq.example.com:" + refused, ""},
		{"rabbitmq, no such host", open, hub.Destination{Type: hub.DestinationRabbitMQ, URL: "amqp://mq.invalid/", Exchange: "x"},
			"dns: no such host mq.invalid", ""},
		{"rabbitmq, a private address blocked", blocked, hub.Destination{Type: hub.DestinationRabbitMQ, URL: "amqps://mq.example.com/", Exchange: "x"},
			"destination mq.example.com resolves to a private address (blocked)", ""},
		{"nats, refused port", open, hub.Destination{Type: hub.DestinationNATS, URL: "nats://nats.example.com:" + refused, Subject: "s"},
			"connect: connection refused by nats.example.com:" + refused, ""},
		{"nats, no such host", open, hub.Destination{Type: hub.DestinationNATS, URL: "nats://nats.invalid:4222", Subject: "s"},
			"dns: no such host nats.invalid", ""},
		{"kafka, refused port", open, hub.Destination{Type: hub.DestinationKafka, Brokers: []string{"kafka.example.com:" + refused}, Topic: "t"},
			"connect: connection refused by kafka.example.com:" + refused, ""},
		{"kafka, a private address blocked", blocked, hub.Destination{Type: hub.DestinationKafka, Brokers: []string{"kafka.example.com:9092"}, Topic: "t"},
			"destination kafka.example.com resolves to a private address (blocked)", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := c.r.Send(context.Background(), destination.Target{Destination: c.dest, Secrets: []string{destination.NewSecret()}}, destination.Message{
				ID: "msg_1", EventType: "a.b", TenantID: "acme", ContentType: "application/json", Body: []byte(`{}`), Time: time.Now()})
			if res.Err == nil {
				t.Fatal("the send succeeded")
			}
			got := res.Err.Error()
			t.Logf("tenant reads %q; the log %q", got, destination.Detail(res.Err))
			if got != c.want {
				t.Errorf("tenant reads %q, want %q", got, c.want)
			}
			for _, ip := range ipPattern.FindAllString(got, -1) {
				if ip != c.literal {
					t.Errorf("tenant reads an address they did not write, %s: %q", ip, got)
				}
			}
			for _, r := range resolvers {
				if strings.Contains(got, r) {
					t.Errorf("tenant reads the hub's resolver %s: %q", r, got)
				}
			}
		})
	}
}

// An ARN's ::<account>: is digits and colons but no address: a tenant
// reads the role or topic it wrote whole, while a real address beside it
// is still replaced.
func TestExplain_KeepsARNsWhole(t *testing.T) {
	err := errors.New("access denied assuming role arn:aws:iam::111122223333:role/hub from 10.0.0.7:443 and [fd00::1]:80")
	got := destination.Describe(err)
	want := "access denied assuming role arn:aws:iam::111122223333:role/hub from <address> and <address>"
	if got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}
