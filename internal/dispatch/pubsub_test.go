package dispatch_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/pubsub"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// pubsubRig is a rig whose dispatcher publishes to a fake Pub/Sub server
// of the test's own, with a subscription of acme to topic events of
// project acme-events (its service account key sealed as the API seals
// it).
func pubsubRig(t *testing.T, d testkit.Driver) (*rig, *testkit.PubSub) {
	ps := testkit.NewPubSub(t)
	pub, err := pubsub.New(pubsub.Options{ClientOptions: ps.ClientOptions(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
		c.Destinations = destinations(t, testkit.Patience, map[string]destination.Driver{hub.DestinationPubSub: pub})
	}})
	r.brokerSub("sub_pubsub", hub.Destination{Type: hub.DestinationPubSub, Project: "acme-events", Topic: "events"},
		hub.Credentials{ServiceAccount: testkit.ServiceAccountJSON(t, "acme-events")})
	return r, ps
}

// A Pub/Sub fake topic receives a produced event exactly once per event
// id, in order for an ordered subscription with ordering key = tenant
// id, with the ce-*, X-Lerian-* and webhook-* attributes; the signature
// verifies with consumer.Verify.
func TestPubSub_TopicReceivesEveryEventOnceSignedAndInOrder(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r, ps := pubsubRig(t, d)
		ps.CreateTopic(t, "acme-events", "events")
		ps.CreateOrderedSubscription(t, "acme-events", "events", "reader")
		const count = 25
		for i := range count {
			r.publish(event("acme", fmt.Sprintf("evt-%02d", i)))
		}
		r.run()
		testkit.WaitFor(t, "every job succeeded", func() bool { return r.allSucceeded("acme", "sub_pubsub", count) })
		if published := ps.Messages("acme-events", "events"); len(published) != count {
			t.Fatalf("the topic took %d messages, want %d: each event once", len(published), count)
		}
		got := ps.Pull(t, "acme-events", "reader")
		if len(got) != count {
			t.Fatalf("the ordered subscription delivered %d messages, want %d", len(got), count)
		}
		for i, m := range got {
			id := fmt.Sprintf("evt-%02d", i)
			a := m.Attributes
			if a["ce-id"] != id || a["X-Lerian-Event-Id"] != id || m.OrderingKey != "acme" {
				t.Fatalf("message %d is %s (ordering key %q): want %s, in arrival order, key acme", i, a["ce-id"], m.OrderingKey, id)
			}
			for _, k := range []string{"ce-type", "ce-source", "ce-specversion", "ce-time", "ce-subject", "ce-tenantid", "ce-schemaversion", "content-type",
				"X-Lerian-Delivery-Id", "X-Lerian-Event-Type", "X-Lerian-Tenant-Id", "X-Lerian-Sequence", "webhook-id", "webhook-timestamp", "webhook-signature"} {
				if a[k] == "" {
					t.Fatalf("message %d has no %s attribute: %v", i, k, a)
				}
			}
			if a["X-Lerian-Sequence"] != strconv.Itoa(i+1) {
				t.Fatalf("message %d: sequence %s", i, a["X-Lerian-Sequence"])
			}
			h := http.Header{}
			for k, v := range a {
				h.Set(k, v)
			}
			if err := consumer.VerifyAt(r.secret, h, m.Data, 5*time.Minute, r.clock.Now()); err != nil {
				t.Fatalf("message %d does not verify: %v", i, err)
			}
		}
	})
}

// The topic does not exist: a failed attempt naming it, waiting for its
// retry, never counted as delivered; once the topic exists the retry
// lands, once.
func TestPubSub_MissingTopicIsAFailedAttemptThenTheRetryLands(t *testing.T) {
	r, ps := pubsubRig(t, testkit.Drivers[len(testkit.Drivers)-1])
	r.publish(event("acme", "evt-1"))
	r.run()
	testkit.WaitFor(t, "the failed attempt recorded", func() bool {
		jobs := r.jobsOf("acme", "sub_pubsub")
		return len(jobs) == 1 && jobs[0].Attempts == 1 && jobs[0].Status == hub.JobPending
	})
	j, attempts, err := r.store.GetJob(r.ctx, "acme", r.jobsOf("acme", "sub_pubsub")[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 1 || !strings.Contains(attempts[0].Error, `topic "projects/acme-events/topics/events" does not exist`) || j.LastError != attempts[0].Error {
		t.Fatalf("attempts %+v, last error %q: want one failure naming the topic", attempts, j.LastError)
	}
	if strings.Contains(attempts[0].Error, "PRIVATE KEY") {
		t.Fatalf("the error shows the key: %s", attempts[0].Error)
	}
	ps.CreateTopic(t, "acme-events", "events")
	testkit.WaitFor(t, "the retry succeeded", func() bool {
		r.clock.Advance(time.Minute)
		return r.allSucceeded("acme", "sub_pubsub", 1)
	})
	if got := ps.Messages("acme-events", "events"); len(got) != 1 || got[0].Attributes["ce-id"] != "evt-1" {
		t.Fatalf("the topic took %d messages", len(got))
	}
}
