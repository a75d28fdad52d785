package dispatch_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/rabbitmq"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// brokerSub stores a verified subscription of acme to dest, signed with
// r's secret, with credentials sealed as the API seals them.
func (r *rig) brokerSub(id string, dest hub.Destination, creds hub.Credentials) hub.Subscription {
	r.t.Helper()
	s := storetest.NewSubscription("acme", id)
	s.Destination, s.VerificationState, s.RetrySchedule = dest, hub.VerificationActive, nil
	if err := destination.SealSecrets(r.keyring, &s, hub.SubscriptionSecrets{
		Signing: []hub.SigningSecret{{Secret: r.secret}}, Broker: creds,
	}); err != nil {
		r.t.Fatal(err)
	}
	out, err := r.store.CreateSubscription(r.ctx, s)
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// rabbitRig is a rig whose dispatcher publishes to RabbitMQ under a
// connection name of its own, with a subscription to a fresh exchange
// whose queue receives everything.
func rabbitRig(t *testing.T, d testkit.Driver) (*rig, *testkit.Rabbit, string) {
	mq := testkit.NewRabbit(t, "acme.#")
	name := "hub-test-" + testkit.UniqueName()
	dialer := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	pub, err := rabbitmq.New(rabbitmq.Options{Dial: dialer.DialContext, Name: name})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
		c.Destinations = destinations(t, testkit.Patience, map[string]destination.Driver{hub.DestinationRabbitMQ: pub})
	}})
	u, _ := url.Parse(mq.URL)
	pass, _ := u.User.Password()
	creds := hub.Credentials{Username: u.User.Username(), Password: pass}
	u.User = nil
	r.brokerSub("sub_rabbit", hub.Destination{Type: hub.DestinationRabbitMQ, URL: u.String(),
		Exchange: mq.Exchange, RoutingKey: "{tenant}.{type}"}, creds)
	return r, mq, name
}

// amqpHeaders are a message's headers as a receiver's http.Header.
func amqpHeaders(d amqp.Delivery) http.Header {
	h := http.Header{}
	for k, v := range d.Headers {
		if s, ok := v.(string); ok {
			h.Set(k, s)
		}
	}
	return h
}

// A queue bound to the subscription's exchange receives every event once,
// in arrival order, as a persistent message carrying the headers a
// webhook gets; the signature verifies with consumer.Verify.
func TestRabbitMQ_QueueReceivesEveryEventOnceSignedAndInOrder(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r, mq, _ := rabbitRig(t, d)
		const n = 25
		for i := range n {
			r.publish(event("acme", fmt.Sprintf("evt-%02d", i)))
		}
		r.run()
		var got []amqp.Delivery
		testkit.WaitFor(t, "every event in the queue", func() bool {
			got = append(got, mq.Take(t)...)
			return len(got) >= n
		})
		for i, m := range got {
			id := fmt.Sprintf("evt-%02d", i)
			h := amqpHeaders(m)
			if m.MessageId != id || h.Get("ce-id") != id || h.Get("X-Lerian-Event-Id") != id {
				t.Fatalf("message %d is %s (ce-id %s): want %s, in arrival order", i, m.MessageId, h.Get("ce-id"), id)
			}
			if m.DeliveryMode != amqp.Persistent || m.ContentType != "application/json" || m.Type != "transaction.posted" ||
				m.RoutingKey != "acme.transaction.posted" || m.Timestamp.IsZero() {
				t.Fatalf("message %d properties: mode %d, content type %q, type %q, key %q, timestamp %v", i, m.DeliveryMode, m.ContentType, m.Type, m.RoutingKey, m.Timestamp)
			}
			for _, k := range []string{"ce-type", "ce-source", "ce-specversion", "ce-time", "ce-subject", "ce-tenantid", "ce-schemaversion",
				"X-Lerian-Delivery-Id", "X-Lerian-Event-Type", "X-Lerian-Tenant-Id", "X-Lerian-Sequence", "webhook-id", "webhook-timestamp", "webhook-signature"} {
				if _, ok := m.Headers[k]; !ok {
					t.Fatalf("message %d has no %s header: %v", i, k, m.Headers)
				}
			}
			if h.Get("X-Lerian-Sequence") != strconv.Itoa(i+1) || h.Get("webhook-id") != id {
				t.Fatalf("message %d: sequence %s, webhook-id %s", i, h.Get("X-Lerian-Sequence"), h.Get("webhook-id"))
			}
			if err := consumer.VerifyAt(r.secret, h, m.Body, 5*time.Minute, r.clock.Now()); err != nil {
				t.Fatalf("message %d does not verify: %v", i, err)
			}
		}
		if len(got) != n {
			t.Fatalf("queue received %d messages, want %d: each event once", len(got), n)
		}
		testkit.WaitFor(t, "every job succeeded", func() bool { return r.allSucceeded("acme", "sub_rabbit", n) })
		// The attempt log keeps the message's headers and properties as
		// the queue got them; a broker answers without headers.
		found := false
		for _, j := range r.jobsOf("acme", "sub_rabbit") {
			if j.EventID != "evt-00" {
				continue
			}
			found = true
			_, as, err := r.store.GetJob(r.ctx, "acme", j.ID)
			if err != nil || len(as) != 1 {
				t.Fatalf("attempts %+v, %v", as, err)
			}
			logged, m := as[0].RequestHeaders, got[0]
			for k, v := range m.Headers {
				if logged[k] != fmt.Sprint(v) {
					t.Errorf("logged %s = %q, the queue got %q", k, logged[k], v)
				}
			}
			if logged["message_id"] != m.MessageId || logged["content_type"] != m.ContentType || logged["type"] != m.Type ||
				len(logged) != len(m.Headers)+6 || as[0].ResponseHeaders != nil {
				t.Errorf("logged headers %v, response headers %v; the queue got %v", logged, as[0].ResponseHeaders, m)
			}
		}
		if !found {
			t.Fatal("no job for evt-00")
		}
	})
}

// The hub's AMQP connection closed by force mid-stream loses nothing: the
// hub reconnects and every event reaches the queue (at least once). A
// rate limit on the fake clock holds the stream half way while the
// connection is closed, so the close always lands mid-stream.
func TestRabbitMQ_ForcedCloseMidStreamLosesNothingAndReconnects(t *testing.T) {
	testkit.Long(t)
	r, mq, name := rabbitRig(t, testkit.Drivers[len(testkit.Drivers)-1])
	sub, err := r.store.GetSubscription(r.ctx, "acme", "sub_rabbit")
	if err != nil {
		t.Fatal(err)
	}
	sub.RateLimit = 40
	if _, err := r.store.UpdateSubscription(r.ctx, sub); err != nil {
		t.Fatal(err)
	}
	const n = 200
	var evs []hub.Event
	for i := range n {
		evs = append(evs, event("acme", fmt.Sprintf("evt-%03d", i)))
	}
	r.publish(evs...)
	r.run()
	seen := make(map[string]int)
	take := func() {
		for _, m := range mq.Take(t) {
			seen[m.MessageId]++
		}
	}
	testkit.WaitFor(t, "the first second's messages", func() bool { take(); return len(seen) == 40 })
	if closed := testkit.CloseAMQPConnections(t, name); closed != 1 {
		t.Fatalf("closed %d connections named %s, want 1", closed, name)
	}
	testkit.WaitFor(t, "every event in the queue after the forced close", func() bool {
		take()
		// The next second's tokens; attempts the close failed come due
		// for their retry as well (and past any breaker it opened).
		r.clock.Advance(time.Second)
		return len(seen) == n
	})
	testkit.WaitFor(t, "every job succeeded", func() bool {
		r.clock.Advance(time.Second)
		return r.allSucceeded("acme", "sub_rabbit", n)
	})
	if open := testkit.CloseAMQPConnections(t, name); open != 1 {
		t.Fatalf("%d connections named %s after the stream, want 1: the hub reconnected once and kept it", open, name)
	}
}

// A message no queue is bound for comes back under mandatory: a failed
// attempt, waiting for its retry, never counted as delivered.
func TestRabbitMQ_UnroutableIsAFailedAttempt(t *testing.T) {
	r, mq, _ := rabbitRig(t, testkit.Drivers[len(testkit.Drivers)-1])
	sub, err := r.store.GetSubscription(r.ctx, "acme", "sub_rabbit")
	if err != nil {
		t.Fatal(err)
	}
	sub.Destination.RoutingKey = "nobody.{type}" // the queue is bound to acme.#
	if _, err := r.store.UpdateSubscription(r.ctx, sub); err != nil {
		t.Fatal(err)
	}
	r.publish(event("acme", "evt-1"))
	r.run()
	testkit.WaitFor(t, "the failed attempt recorded", func() bool {
		jobs := r.jobsOf("acme", "sub_rabbit")
		return len(jobs) == 1 && jobs[0].Attempts == 1 && jobs[0].Status == hub.JobPending
	})
	j, attempts, err := r.store.GetJob(r.ctx, "acme", r.jobsOf("acme", "sub_rabbit")[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 1 || !strings.Contains(attempts[0].Error, "unroutable") || !strings.Contains(j.LastError, "unroutable") {
		t.Fatalf("attempts %+v, last error %q: want one unroutable failure", attempts, j.LastError)
	}
	if got := mq.Take(t); len(got) != 0 {
		t.Fatalf("the queue received %d messages", len(got))
	}
}
