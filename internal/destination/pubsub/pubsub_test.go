package pubsub_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/pubsub"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const project = "acme-events"

func publisher(t testing.TB, ps *testkit.PubSub) *pubsub.Publisher {
	t.Helper()
	p, err := pubsub.New(pubsub.Options{ClientOptions: ps.ClientOptions(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func target(t testing.TB, topic string) destination.Target {
	return destination.Target{
		Destination: hub.Destination{Type: hub.DestinationPubSub, Project: project, Topic: topic},
		Credentials: hub.Credentials{ServiceAccount: testkit.ServiceAccountJSON(t, project)},
	}
}

func message(tenant, id string) destination.Message {
	return destination.Message{ID: id, EventType: "transaction.posted", TenantID: tenant, ContentType: "application/json",
		Body: []byte(`{"id":"` + id + `"}`), Time: time.Unix(1700000000, 0),
		Headers: http.Header{"ce-id": {id}, "ce-type": {"com.lerian.transaction.posted.v1"}, "ce-specversion": {"1.0"},
			"X-Lerian-Delivery-Id": {"att_" + id}, "webhook-signature": {"v1,abc"}}}
}

func send(t testing.TB, p *pubsub.Publisher, tg destination.Target, m destination.Message) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Scaled(10*time.Second))
	defer cancel()
	return p.Send(ctx, tg, m).Err
}

// Binary mode: data = the body, attributes = the headers and
// content-type, ordering key = the tenant; an ordered subscription gets
// each tenant's messages in the order they were sent; one client serves
// every send to the destination.
func TestPublish_BinaryModeOrderedByTenantOnOneClient(t *testing.T) {
	ps := testkit.NewPubSub(t)
	ps.CreateTopic(t, project, "events")
	ps.CreateOrderedSubscription(t, project, "events", "reader")
	p := publisher(t, ps)
	tg := target(t, "events")
	const count = 20
	for i := range count {
		for _, tenant := range []string{"acme", "globex"} {
			if err := send(t, p, tg, message(tenant, fmt.Sprintf("%s-%02d", tenant, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if p.Clients() != 1 {
		t.Fatalf("%d clients for one destination", p.Clients())
	}
	next := map[string]int{}
	got := ps.Pull(t, project, "reader")
	if len(got) != 2*count {
		t.Fatalf("the subscription delivered %d messages, want %d", len(got), 2*count)
	}
	for _, m := range got {
		want := fmt.Sprintf("%s-%02d", m.OrderingKey, next[m.OrderingKey])
		next[m.OrderingKey]++
		if m.Attributes["ce-id"] != want || string(m.Data) != `{"id":"`+want+`"}` {
			t.Fatalf("got %s (%s) with ordering key %q, want %s: each tenant's in order", m.Attributes["ce-id"], m.Data, m.OrderingKey, want)
		}
		for k, v := range map[string]string{"content-type": "application/json", "ce-type": "com.lerian.transaction.posted.v1",
			"ce-specversion": "1.0", "X-Lerian-Delivery-Id": "att_" + want, "webhook-signature": "v1,abc"} {
			if m.Attributes[k] != v {
				t.Fatalf("attribute %s = %q, want %q: %v", k, m.Attributes[k], v, m.Attributes)
			}
		}
	}
	if next["acme"] != count || next["globex"] != count {
		t.Fatalf("per tenant: %v", next)
	}
}

// The verification probe publishes a signed hub.verification message; a
// topic that does not exist fails it, naming the topic.
func TestProbe_PublishesAndAMissingTopicFailsNamingIt(t *testing.T) {
	ps := testkit.NewPubSub(t)
	ps.CreateTopic(t, project, "events")
	p := publisher(t, ps)
	wait := testkit.Scaled(10 * time.Second) // the delivery timeout: a local fake or server answers well within it
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	r := destination.NewRegistry(wait, map[string]destination.Driver{hub.DestinationPubSub: p})
	signed := func(t destination.Target) destination.Target {
		t.Secrets = []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
		return t
	}
	res := r.Probe(ctx, signed(target(t, "events")), "acme", "sub_1", time.Now())
	if !res.Passed {
		t.Fatalf("probe: %s", res.Error)
	}
	got := ps.Messages(project, "events")
	if len(got) != 1 || got[0].Attributes["X-Lerian-Event-Type"] != "hub.verification" || got[0].Attributes["webhook-signature"] == "" ||
		got[0].OrderingKey != "acme" || !strings.Contains(string(got[0].Data), "sub_1") {
		t.Fatalf("published %+v", got)
	}
	res = r.Probe(ctx, signed(target(t, "missing")), "acme", "sub_1", time.Now())
	if res.Passed || !strings.Contains(res.Error, `topic "projects/acme-events/topics/missing" does not exist`) {
		t.Fatalf("probe of a missing topic: %+v", res)
	}
}

// failOnce fails the first n publish requests it sees with code.
type failOnce struct {
	mu   sync.Mutex
	n    int
	code codes.Code
	wait time.Duration
}

func (f *failOnce) React(any) (bool, any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		return false, nil, nil
	}
	f.n--
	time.Sleep(f.wait)
	return true, nil, status.Error(f.code, "injected")
}

// A failed publish pauses the tenant's ordering key in the library; the
// sender resumes it, so the next attempt (the hub's retry) goes through.
func TestPublish_AnErrorDoesNotLeaveTheOrderingKeyPaused(t *testing.T) {
	ps := testkit.NewPubSub(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: &failOnce{n: 1, code: codes.PermissionDenied}})
	ps.CreateTopic(t, project, "events")
	p := publisher(t, ps)
	tg := target(t, "events")
	err := send(t, p, tg, message("acme", "evt-1"))
	if err == nil || !strings.Contains(err.Error(), "may not publish to topic") {
		t.Fatalf("first attempt: %v", err)
	}
	if err := send(t, p, tg, message("acme", "evt-1")); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if got := ps.Messages(project, "events"); len(got) != 1 || got[0].Attributes["ce-id"] != "evt-1" {
		t.Fatalf("published %d", len(got))
	}
}

// An attempt whose context ends first fails at once naming the delivery
// timeout; the publish still going on fails later, and the key is
// resumed then: a later attempt goes through.
func TestPublish_TheAttemptsContextBoundsTheWait(t *testing.T) {
	testkit.Long(t)
	ps := testkit.NewPubSub(t, pstest.ServerReactorOption{FuncName: "Publish",
		Reactor: &failOnce{n: 1, code: codes.Internal, wait: 5 * time.Second}})
	ps.CreateTopic(t, project, "events")
	p := publisher(t, ps)
	tg := target(t, "events")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.Send(ctx, tg, message("acme", "evt-1")).Err
	if err == nil || !strings.Contains(err.Error(), "within the delivery timeout") || time.Since(start) >= 5*time.Second {
		t.Fatalf("after %s: %v", time.Since(start), err)
	}
	testkit.WaitFor(t, "a later attempt through", func() bool { return send(t, p, tg, message("acme", "evt-1")) == nil })
}

// PUBSUB_EMULATOR_HOST sends every destination to the emulator, which
// takes no credentials: the client library honours it.
func TestPublish_HonoursPubSubEmulatorHost(t *testing.T) {
	ps := testkit.NewPubSub(t)
	ps.CreateTopic(t, project, "events")
	t.Setenv("PUBSUB_EMULATOR_HOST", ps.Addr)
	p, err := pubsub.New(pubsub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := send(t, p, target(t, "events"), message("acme", "evt-1")); err != nil {
		t.Fatal(err)
	}
	if got := ps.Messages(project, "events"); len(got) != 1 {
		t.Fatalf("the emulator holds %d messages", len(got))
	}
}

// A key whose token_uri is not Google's is refused before any client is
// made: the hub never posts to a host a tenant chose.
func TestSend_RefusesAKeyPointingElsewhere(t *testing.T) {
	p, err := pubsub.New(pubsub.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tg := target(t, "events")
	tg.Credentials.ServiceAccount = strings.Replace(tg.Credentials.ServiceAccount, "https://oauth2.googleapis.com/token", "http://169.254.169.254/token", 1)
	if err := send(t, p, tg, message("acme", "evt-1")); err == nil || !strings.Contains(err.Error(), "token_uri") || p.Clients() != 0 {
		t.Fatalf("send: %v (%d clients)", err, p.Clients())
	}
}
