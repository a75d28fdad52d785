package rabbitmq_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/rabbitmq"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func publisher(t testing.TB, name string) *rabbitmq.Publisher {
	t.Helper()
	d := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	p, err := rabbitmq.New(rabbitmq.Options{Dial: d.DialContext, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// target is r's broker with the credentials taken out of the URL, as the
// API stores them.
func target(t testing.TB, r *testkit.Rabbit, routingKey string) destination.Target {
	t.Helper()
	u, err := url.Parse(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	pass, _ := u.User.Password()
	creds := hub.Credentials{Username: u.User.Username(), Password: pass}
	u.User = nil
	return destination.Target{
		Destination: hub.Destination{Type: hub.DestinationRabbitMQ, URL: u.String(), Exchange: r.Exchange, RoutingKey: routingKey},
		Credentials: creds,
	}
}

func message(id, delivery string) destination.Message {
	return destination.Message{ID: id, EventType: "transaction.posted", TenantID: "acme", ContentType: "application/json",
		Body: []byte(`{"id":"` + id + `"}`), Time: time.Unix(1700000000, 0),
		Headers: http.Header{"ce-id": {id}, "X-Lerian-Delivery-Id": {delivery}, "webhook-signature": {"v1,abc"}}}
}

func send(t testing.TB, p *rabbitmq.Publisher, tg destination.Target, m destination.Message) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	return p.Send(ctx, tg, m).Err
}

func TestPublish_PersistentWithPropertiesHeadersAndTemplatedKey(t *testing.T) {
	r := testkit.NewRabbit(t, "acme.transaction.posted")
	p := publisher(t, "test-"+testkit.UniqueName())
	if err := send(t, p, target(t, r, "{tenant}.{type}"), message("evt-1", "att_1")); err != nil {
		t.Fatal(err)
	}
	var got []string
	testkit.WaitFor(t, "the message in the queue", func() bool {
		for _, d := range r.Take(t) {
			got = append(got, string(d.Body))
			if d.DeliveryMode != 2 || d.ContentType != "application/json" || d.MessageId != "evt-1" || d.Type != "transaction.posted" ||
				!d.Timestamp.Equal(time.Unix(1700000000, 0)) || d.Headers["ce-id"] != "evt-1" || d.Headers["webhook-signature"] != "v1,abc" ||
				d.RoutingKey != "acme.transaction.posted" {
				t.Fatalf("delivery %+v", d)
			}
		}
		return len(got) == 1
	})
}

func TestPublish_UnroutableIsAFailureAndAMissingExchangeDoesNotBreakTheNext(t *testing.T) {
	r := testkit.NewRabbit(t, "bound")
	p := publisher(t, "test-"+testkit.UniqueName())
	err := send(t, p, target(t, r, "nobody.listens"), message("evt-1", "att_1"))
	if err == nil || !strings.Contains(err.Error(), "unroutable") {
		t.Fatalf("unroutable publish: %v, want an unroutable failure", err)
	}
	missing := target(t, r, "bound")
	missing.Exchange = "test.none." + testkit.UniqueName()
	if err := send(t, p, missing, message("evt-2", "att_2")); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("publish to a missing exchange: %v, want the broker's 404", err)
	}
	if err := send(t, p, target(t, r, "bound"), message("evt-3", "att_3")); err != nil {
		t.Fatalf("after a channel error: %v", err)
	}
	if got := r.Take(t); len(got) != 1 || got[0].MessageId != "evt-3" {
		t.Fatalf("queue holds %d messages, want evt-3 only", len(got))
	}
}

func TestPublish_ReconnectsAfterTheBrokerClosedTheConnection(t *testing.T) {
	testkit.Long(t)
	r := testkit.NewRabbit(t, "#")
	name := "test-" + testkit.UniqueName()
	p := publisher(t, name)
	tg := target(t, r, "k")
	if err := send(t, p, tg, message("evt-1", "att_1")); err != nil {
		t.Fatal(err)
	}
	if n := testkit.CloseAMQPConnections(t, name); n != 1 {
		t.Fatalf("closed %d connections named %s, want 1", n, name)
	}
	// The close reaches the hub's side asynchronously: the first publish
	// after it may still fail; a later one reconnects.
	testkit.WaitFor(t, "a publish on a new connection", func() bool { return send(t, p, tg, message("evt-2", "att_2")) == nil })
	got := r.Take(t)
	if len(got) < 2 || got[0].MessageId != "evt-1" || got[len(got)-1].MessageId != "evt-2" {
		t.Fatalf("queue holds %d messages", len(got))
	}
}

func TestPublish_RefusesAPrivateBrokerUnlessAllowed(t *testing.T) {
	r := testkit.NewRabbit(t, "#")
	d := destination.NewDialer(destination.DialOptions{AllowPrivate: false})
	p, err := rabbitmq.New(rabbitmq.Options{Dial: d.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	err = send(t, p, target(t, r, "k"), message("evt-1", "att_1"))
	if err == nil || !strings.Contains(err.Error(), "private") {
		t.Fatalf("publish to 127.0.0.1 without private sinks: %v, want refused", err)
	}
}

// A destination given new credentials (or another vhost, or deleted)
// leaves its old connection behind: it is closed once idle for
// destination.IdleAfter, and only the connection in use stays open.
func TestPublish_AnIdleConnectionIsClosed(t *testing.T) {
	r := testkit.NewRabbit(t, "#")
	name := "test-" + testkit.UniqueName()
	clock := testkit.NewClock()
	d := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	p, err := rabbitmq.New(rabbitmq.Options{Dial: d.DialContext, Name: name, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	old := target(t, r, "k")
	moved := old
	moved.URL = strings.TrimSuffix(old.URL, "/") + "/%2f" // the same broker and vhost, written otherwise: another link
	if err := send(t, p, old, message("evt-1", "att_1")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(destination.IdleAfter + time.Second)
	if err := send(t, p, moved, message("evt-2", "att_2")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the idle connection closed at the broker", func() bool { return len(testkit.AMQPConnections(t, name)) == 1 })
	if p.Links() != 1 {
		t.Fatalf("%d links kept, want 1", p.Links())
	}
	if got := r.Take(t); len(got) != 2 {
		t.Fatalf("queue holds %d messages, want 2", len(got))
	}
}

// A broker reached through a network that fails: connections cut (the hub
// reads an end of file) and connections frozen (open, carrying nothing,
// as a firewall that lost its state leaves them; only the heartbeat would
// notice, 30 s on). Each time the attempt that met the failure may fail,
// and the next one dials again and is confirmed, with no restart.
func TestPublish_ThroughACutOrFrozenNetworkTheNextAttemptDialsAgain(t *testing.T) {
	testkit.Long(t)
	r := testkit.NewRabbit(t, "#")
	u, err := url.Parse(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	px := testkit.NewProxy(t, u.Host)
	name := "test-" + testkit.UniqueName()
	p := publisher(t, name)
	tg := target(t, r, "k")
	tu, _ := url.Parse(tg.URL)
	tu.Host = px.Addr
	tg.URL = tu.String()
	if err := send(t, p, tg, message("evt-1", "att_1")); err != nil {
		t.Fatal(err)
	}
	if n := px.Cut(); n != 1 {
		t.Fatalf("cut %d connections, want the publisher's one", n)
	}
	if err := send(t, p, tg, message("evt-2", "att_2")); err != nil {
		t.Logf("the attempt that met the cut failed: %v", err)
		if err := send(t, p, tg, message("evt-2", "att_2b")); err != nil {
			t.Fatalf("the attempt after the cut failed too: %v", err)
		}
	}
	if n := px.Freeze(); n != 1 {
		t.Fatalf("froze %d connections, want the publisher's one", n)
	}
	// A short timeout for the attempt that meets the frozen connection;
	// the next one has the test's patience, far beyond the heartbeat.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	err = p.Send(ctx, tg, message("evt-3", "att_3")).Err
	cancel()
	if err == nil || !strings.Contains(err.Error(), "no confirm") {
		t.Fatalf("a publish on a frozen connection: %v, want no confirm within the timeout", err)
	}
	if err := send(t, p, tg, message("evt-3", "att_3b")); err != nil {
		t.Fatalf("the attempt after a frozen connection: %v", err)
	}
	if n := px.Conns(); n != 1 || p.Links() != 1 {
		t.Fatalf("%d connections through the proxy, %d links kept: want the new one only", n, p.Links())
	}
	var got []string
	for _, d := range r.Take(t) {
		if len(got) == 0 || got[len(got)-1] != d.MessageId {
			got = append(got, d.MessageId)
		}
	}
	if fmt.Sprint(got) != "[evt-1 evt-2 evt-3]" {
		t.Fatalf("the queue holds %v, want evt-1, evt-2 and evt-3 in order", got)
	}
}
