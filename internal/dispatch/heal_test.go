package dispatch_test

import (
	"fmt"
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/kafka"
	"github.com/lerianstudio/streaming-hub/internal/destination/rabbitmq"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// publishBatch stores n events of acme, ids prefix-00 on, and returns them
// in arrival order.
func (r *rig) publishBatch(prefix string, n int) []string {
	r.t.Helper()
	var ids []string
	var evs []hub.Event
	for i := range n {
		ids = append(ids, fmt.Sprintf("%s-%02d", prefix, i))
		evs = append(evs, event("acme", ids[i]))
	}
	r.publish(evs...)
	return ids
}

// waitSucceeded waits until the n jobs of sub succeeded, moving the fake
// clock a second at a time so that retries come due (and past any breaker
// they opened), but never under an attempt in flight: its lease would
// expire on the fake clock and the job be sent again beside it.
func (r *rig) waitSucceeded(sub string, n int) {
	r.t.Helper()
	testkit.WaitFor(r.t, fmt.Sprintf("%d jobs of %s succeeded", n, sub), func() bool {
		jobs, ok := r.jobsOf("acme", sub), 0
		for _, j := range jobs {
			switch j.Status {
			case hub.JobInFlight:
				return false
			case hub.JobSucceeded:
				ok++
			}
		}
		if len(jobs) == n && ok == n {
			return true
		}
		r.clock.Advance(time.Second)
		return false
	})
}

// healed checks what a subscription's destination received (event ids, in
// the order they arrived there) against the events published (in arrival
// order): every event arrived, and the events whose first attempt
// succeeded arrived once each and in arrival order (a failed attempt's job
// waits for its retry without holding the later ones,
// docs/delivery.md#ordering). It returns how many attempts failed.
func (r *rig) healed(sub string, published, received []string) (failed int) {
	r.t.Helper()
	attempts := map[string]int{}
	for _, j := range r.jobsOf("acme", sub) {
		if j.Status != hub.JobSucceeded || j.Recoveries != 0 {
			r.t.Fatalf("job of %s is %s after %d recoveries (%s)", j.EventID, j.Status, j.Recoveries, j.LastError)
		}
		attempts[j.EventID] = j.Attempts
		failed += j.Attempts - 1
	}
	rank := map[string]int{}
	for i, id := range published {
		rank[id] = i
	}
	seen := map[string]bool{}
	var inOrder []int
	for _, id := range received {
		if _, ok := rank[id]; !ok {
			r.t.Fatalf("received %s, which was never published", id)
		}
		if attempts[id] == 1 {
			if seen[id] {
				r.t.Fatalf("received %v: %s, attempted once, arrived twice", received, id)
			}
			inOrder = append(inOrder, rank[id])
		}
		seen[id] = true
	}
	for _, id := range published {
		if !seen[id] {
			r.t.Fatalf("%s never arrived (received %v)", id, received)
		}
	}
	if !sort.IntsAreSorted(inOrder) {
		r.t.Fatalf("received %v: the events attempted once are out of arrival order", received)
	}
	return failed
}

func ceIDs(recs []*kgo.Record) []string {
	var ids []string
	for _, rec := range recs {
		for _, h := range rec.Headers {
			if h.Key == "ce-id" {
				ids = append(ids, string(h.Value))
			}
		}
	}
	return ids
}

// A tenant's Kafka cluster replaced behind the same address (new topic
// ids) while an ordered subscription delivers to it: the attempt that
// meets the new cluster fails, the next dials a new client, and every
// event is delivered, the ones attempted once in arrival order, with no
// restart of the dispatcher.
func TestKafka_AClusterReplacedBehindTheSameAddressIsDeliveredToAgainInOrder(t *testing.T) {
	testkit.Long(t)
	k := testkit.NewReplaceableKafka(t, 1, []string{"tenant.events"})
	dialer := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	prod, err := kafka.New(kafka.Options{Dial: dialer.DialContext, Timeout: testkit.Patience})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prod.Close() })
	r := newRig(t, testkit.Drivers[len(testkit.Drivers)-1], rigOptions{cfg: func(c *dispatch.Config) {
		c.Destinations = destinations(t, testkit.Patience, map[string]destination.Driver{hub.DestinationKafka: prod})
	}})
	r.brokerSub("sub_kafka", hub.Destination{Type: hub.DestinationKafka, Brokers: []string{k.Addr}, Topic: "tenant.events"}, hub.Credentials{})
	before := r.publishBatch("before", 10)
	r.run()
	r.waitSucceeded("sub_kafka", 10)
	received := ceIDs(testkit.ReadRecords(t, k.Cluster(), "tenant.events", 10))

	k.Replace()
	after := r.publishBatch("after", 20)
	r.waitSucceeded("sub_kafka", 30)
	received = append(received, ceIDs(testkit.ReadRecords(t, k.Cluster(), "tenant.events", 20))...)
	failed := r.healed("sub_kafka", append(before, after...), received)
	t.Logf("%d failed attempts; received %v", failed, received)
	if failed == 0 {
		t.Fatal("no attempt failed: the new cluster's topic ids were never met, the test proved nothing")
	}
}

// An ordered subscription to RabbitMQ through a network that fails: its
// connection cut, then frozen (open and silent, which only the heartbeat
// would notice, 15-30 s on). Each time the attempt that meets the failure
// fails and the next one dials again: every event is delivered, the ones
// attempted once in arrival order, with one failed attempt per failure
// (and one to spare on a slow machine), where waiting for the heartbeat
// fails one attempt per delivery timeout until it notices.
func TestRabbitMQ_ThroughACutThenFrozenNetworkIsDeliveredToAgainInOrder(t *testing.T) {
	testkit.Long(t)
	mq := testkit.NewRabbit(t, "acme.#")
	u, err := url.Parse(mq.URL)
	if err != nil {
		t.Fatal(err)
	}
	px := testkit.NewProxy(t, u.Host)
	dialer := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	pub, err := rabbitmq.New(rabbitmq.Options{Dial: dialer.DialContext, Name: "hub-test-" + testkit.UniqueName()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	r := newRig(t, testkit.Drivers[len(testkit.Drivers)-1], rigOptions{cfg: func(c *dispatch.Config) {
		// The attempt on the frozen connection waits this long for its
		// confirm; a healthy one takes milliseconds.
		c.Destinations = destinations(t, 3*time.Second, map[string]destination.Driver{hub.DestinationRabbitMQ: pub})
	}})
	pass, _ := u.User.Password()
	creds := hub.Credentials{Username: u.User.Username(), Password: pass}
	u.User, u.Host = nil, px.Addr
	r.brokerSub("sub_rabbit", hub.Destination{Type: hub.DestinationRabbitMQ, URL: u.String(),
		Exchange: mq.Exchange, RoutingKey: "{tenant}.{type}"}, creds)
	published := r.publishBatch("healthy", 10)
	r.run()
	r.waitSucceeded("sub_rabbit", 10)
	for _, failure := range []struct {
		name string
		do   func() int
	}{{"cut", px.Cut}, {"frozen", px.Freeze}} {
		if n := failure.do(); n != 1 {
			t.Fatalf("%s: %d connections, want the hub's one", failure.name, n)
		}
		batch := r.publishBatch(failure.name, 10)
		published = append(published, batch...)
		r.waitSucceeded("sub_rabbit", len(published))
		if failed := r.failedAttempts("sub_rabbit", batch); failed > 2 {
			t.Fatalf("%s: %d failed attempts: the connection was not dialed again at once", failure.name, failed)
		} else {
			t.Logf("%s: %d failed attempts", failure.name, failed)
		}
	}
	var received []string
	testkit.WaitFor(t, "every message in the queue", func() bool {
		for _, m := range mq.Take(t) {
			received = append(received, m.MessageId)
		}
		return len(received) >= len(published)
	})
	r.healed("sub_rabbit", published, received)
}

// failedAttempts counts the failed attempts of sub's jobs of events ids.
func (r *rig) failedAttempts(sub string, ids []string) int {
	r.t.Helper()
	of := map[string]bool{}
	for _, id := range ids {
		of[id] = true
	}
	n := 0
	for _, j := range r.jobsOf("acme", sub) {
		if of[j.EventID] && j.Status == hub.JobSucceeded {
			n += j.Attempts - 1
		}
	}
	return n
}
