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
	"github.com/lerianstudio/streaming-hub/internal/destination/nats"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// natsRig is a rig whose dispatcher publishes to a nats-server of the
// test's own (user and password required), with a subscription to
// subject events.acme and, when stream is set, that stream expected.
func natsRig(t *testing.T, d testkit.Driver, stream string) (*rig, *testkit.NATS) {
	n := testkit.NewNATS(t, "hub", "n4ts-s3cret")
	dialer := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	pub, err := nats.New(nats.Options{Dial: dialer.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
		c.Destinations = destinations(t, testkit.Patience, map[string]destination.Driver{hub.DestinationNATS: pub})
	}})
	r.brokerSub("sub_nats", hub.Destination{Type: hub.DestinationNATS, URL: n.URL, Subject: "events.acme", Stream: stream},
		hub.Credentials{Username: "hub", Password: "n4ts-s3cret"})
	return r, n
}

// The stream receives every event once, in arrival order, with
// Nats-Msg-Id = the ce-id and the headers a webhook gets; the signature
// verifies with consumer.Verify.
func TestNATS_StreamReceivesEveryEventOnceSignedAndInOrder(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r, n := natsRig(t, d, "EVENTS")
		n.CreateStream(t, "EVENTS", "events.>")
		const count = 25
		for i := range count {
			r.publish(event("acme", fmt.Sprintf("evt-%02d", i)))
		}
		r.run()
		testkit.WaitFor(t, "every job succeeded", func() bool { return r.allSucceeded("acme", "sub_nats", count) })
		got := n.Messages(t, "EVENTS")
		if len(got) != count {
			t.Fatalf("the stream holds %d messages, want %d: each event once", len(got), count)
		}
		for i, m := range got {
			id := fmt.Sprintf("evt-%02d", i)
			h := http.Header(m.Header)
			if m.Header.Get("Nats-Msg-Id") != id || m.Header.Get("ce-id") != id || m.Header.Get("X-Lerian-Event-Id") != id {
				t.Fatalf("message %d is %s (ce-id %s): want %s, in arrival order", i, m.Header.Get("Nats-Msg-Id"), m.Header.Get("ce-id"), id)
			}
			for _, k := range []string{"ce-type", "ce-source", "ce-specversion", "ce-time", "ce-subject", "ce-tenantid", "ce-schemaversion",
				"X-Lerian-Delivery-Id", "X-Lerian-Event-Type", "X-Lerian-Tenant-Id", "X-Lerian-Sequence", "webhook-id", "webhook-timestamp", "webhook-signature"} {
				if m.Header.Get(k) == "" {
					t.Fatalf("message %d has no %s header: %v", i, k, m.Header)
				}
			}
			if m.Header.Get("X-Lerian-Sequence") != strconv.Itoa(i+1) || m.Subject != "events.acme" {
				t.Fatalf("message %d: sequence %s, subject %s", i, m.Header.Get("X-Lerian-Sequence"), m.Subject)
			}
			if err := consumer.VerifyAt(r.secret, h, m.Data, 5*time.Minute, r.clock.Now()); err != nil {
				t.Fatalf("message %d does not verify: %v", i, err)
			}
		}
	})
}

// No stream captures the subject: a failed attempt with a clear error,
// waiting for its retry, never counted as delivered.
func TestNATS_NoStreamIsAFailedAttempt(t *testing.T) {
	r, _ := natsRig(t, testkit.Drivers[len(testkit.Drivers)-1], "")
	r.publish(event("acme", "evt-1"))
	r.run()
	testkit.WaitFor(t, "the failed attempt recorded", func() bool {
		jobs := r.jobsOf("acme", "sub_nats")
		return len(jobs) == 1 && jobs[0].Attempts == 1 && jobs[0].Status == hub.JobPending
	})
	j, attempts, err := r.store.GetJob(r.ctx, "acme", r.jobsOf("acme", "sub_nats")[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 1 || !strings.Contains(attempts[0].Error, `no JetStream stream answered for subject "events.acme"`) || j.LastError != attempts[0].Error {
		t.Fatalf("attempts %+v, last error %q: want one failure naming the subject", attempts, j.LastError)
	}
	if strings.Contains(attempts[0].Error, "n4ts-s3cret") {
		t.Fatalf("the error shows the password: %s", attempts[0].Error)
	}
}

// The server restarted (same port and store) between two events: the
// next attempt dials again and the stream holds both, once each.
func TestNATS_ServerRestartedTheNextAttemptDialsAgain(t *testing.T) {
	r, n := natsRig(t, testkit.Drivers[len(testkit.Drivers)-1], "EVENTS")
	n.CreateStream(t, "EVENTS", "events.>")
	r.publish(event("acme", "evt-1"))
	r.run()
	testkit.WaitFor(t, "the first job succeeded", func() bool { return r.allSucceeded("acme", "sub_nats", 1) })
	n.Stop(t)
	n.Start(t)
	r.publish(event("acme", "evt-2"))
	testkit.WaitFor(t, "the second job succeeded", func() bool {
		r.clock.Advance(time.Second)
		return r.allSucceeded("acme", "sub_nats", 2)
	})
	got := n.Messages(t, "EVENTS")
	if len(got) != 2 || got[1].Header.Get("Nats-Msg-Id") != "evt-2" {
		t.Fatalf("the stream holds %d messages", len(got))
	}
}
