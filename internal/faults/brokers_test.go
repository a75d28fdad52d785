//go:build faults

package faults

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A tenant's Kafka cluster (in the test process) replaced behind the same
// address while the hub runs: new topic ids, which a cached franz-go
// client fails with UNKNOWN_TOPIC_ID for good. The hub drops that client
// and dials again: the events produced after the replacement all reach the
// new cluster, the ones attempted once in arrival order and once each,
// with no restart of the hub.
func TestKafkaDestinationClusterReplaced(t *testing.T) {
	w := newWorld(t, 0, 1, 0)
	dest := testkit.NewReplaceableKafka(t, 1, []string{"tenant.events"})
	sub := w.addBrokerTenant("kafka-dest", hub.Destination{Type: hub.DestinationKafka, Brokers: []string{dest.Addr}, Topic: "tenant.events"}, hub.Credentials{})
	p := w.start()

	before := w.produceTo("kafka-dest", "before", 200, 200)
	w.waitSucceeded(sub, len(before))
	received := recordIDs(testkit.ReadRecords(t, dest.Cluster(), "tenant.events", len(before)))

	dest.Replace()
	after := w.produceTo("kafka-dest", "after", 300, 100)
	w.waitSucceeded(sub, len(before)+len(after))
	received = append(received, recordIDs(testkit.ReadRecords(t, dest.Cluster(), "tenant.events", len(after)))...)

	failed, errs := w.checkHealed(p, sub, append(before, after...), received)
	fmt.Printf("\n== a Kafka destination's cluster replaced behind the same address (new topic ids)\n   produced %d, delivered %d to the old cluster and %d to the new one, no hub restart; failed attempts %d: %v\n",
		len(before)+len(after), len(before), len(received)-len(before), failed, errs)
	if failed == 0 {
		t.Error("no attempt failed: the new cluster's topic ids were never met, the scenario proved nothing")
	}
}

// A tenant's RabbitMQ reached through a proxy of the test's own that
// fails mid-stream: the hub's connection cut (it reads an end of file),
// then frozen (open and silent, as a firewall that lost its state leaves
// it; only the heartbeat would notice, 15-30 s on). The hub dials again at
// the next attempt each time: every event reaches the queue, the ones
// attempted once in arrival order and once each, with no restart and about
// one failed attempt per failure, where waiting for the heartbeat fails
// one per delivery timeout (2 s here) until it notices.
func TestRabbitMQDestinationConnectionsCut(t *testing.T) {
	w := newWorld(t, 0, 1, 0)
	mq := testkit.NewRabbit(t, "rabbit-dest.#")
	u, err := url.Parse(mq.URL)
	if err != nil {
		t.Fatal(err)
	}
	px := testkit.NewProxy(t, u.Host)
	pass, _ := u.User.Password()
	creds := hub.Credentials{Username: u.User.Username(), Password: pass}
	u.User, u.Host = nil, px.Addr
	sub := w.addBrokerTenant("rabbit-dest", hub.Destination{Type: hub.DestinationRabbitMQ, URL: u.String(),
		Exchange: mq.Exchange, RoutingKey: "{tenant}.{type}"}, creds)
	p := w.start("STREAMING_HUB_DELIVERY_TIMEOUT=2s")

	var ids []string
	produced := make(chan struct{})
	go func() { ids = w.produceTo("rabbit-dest", "evt", 600, 50); close(produced) }()
	var received []string
	take := func() int {
		for _, m := range mq.Take(t) {
			received = append(received, m.MessageId)
		}
		return len(received)
	}
	cuts := []struct {
		name string
		at   int // messages in the queue
		do   func() int
	}{{"cut", 150, px.Cut}, {"frozen", 350, px.Freeze}}
	for _, c := range cuts {
		w.waitFor(fmt.Sprintf("%d messages before the %s connection", c.at, c.name), func() bool { return take() >= c.at })
		if n := c.do(); n != 1 {
			t.Fatalf("%s: %d connections through the proxy, want the hub's one", c.name, n)
		}
		fmt.Printf("   %s connection at %d messages\n", c.name, len(received))
	}
	<-produced
	w.waitSucceeded(sub, len(ids))
	w.waitFor("every message in the queue", func() bool { return take() >= len(ids) })

	failed, errs := w.checkHealed(p, sub, ids, received)
	fmt.Printf("\n== a RabbitMQ destination through a proxy that cut, then froze, the hub's connection mid-stream\n   produced %d, received %d, no hub restart; failed attempts %d: %v\n",
		len(ids), len(received), failed, errs)
	if failed > 2*len(cuts) {
		t.Errorf("%d failed attempts for %d failures: the hub did not dial again at the next attempt", failed, len(cuts))
	}
}

// addBrokerTenant stores a tenant with one verified, ordered subscription
// (max_in_flight 1) to a broker destination, retried every second twelve
// times, credentials sealed as the API seals them, and returns it.
func (w *world) addBrokerTenant(id string, dest hub.Destination, creds hub.Credentials) hub.Subscription {
	return w.storeOrderedTenant(id, dest, creds, holdRetry)
}

// produceTo sends n events of tenant (ids prefix-000000 on) at about rate
// per second and returns their ids in the order produced (one partition:
// the order they arrive in).
func (w *world) produceTo(tenant, prefix string, n, rate int) []string {
	ids := make([]string, 0, n)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	perTick := max(rate/100, 1)
	for len(ids) < n {
		<-tick.C
		var recs []*kgo.Record
		for j := 0; j < perTick && len(ids) < n; j++ {
			id := fmt.Sprintf("%s-%06d", prefix, len(ids))
			ids = append(ids, id)
			recs = append(recs, testkit.CERecord(topic, 0, tenant, id))
		}
		testkit.Produce(w.t, w.prod, recs...)
	}
	return ids
}

// jobsOf is every job of s.
func (w *world) jobsOf(s hub.Subscription) []hub.Job {
	w.t.Helper()
	var all []hub.Job
	before := ""
	for {
		jobs, err := w.db.ListJobs(context.Background(), store.ListJobsParams{TenantID: s.TenantID, SubscriptionID: s.ID, Before: before, Limit: 500})
		if err != nil {
			w.t.Fatal(err)
		}
		all = append(all, jobs...)
		if len(jobs) < 500 {
			return all
		}
		before = jobs[len(jobs)-1].ID
	}
}

// waitSucceeded waits until s has n jobs, all succeeded.
func (w *world) waitSucceeded(s hub.Subscription, n int) {
	w.t.Helper()
	w.waitFor(fmt.Sprintf("%d jobs of %s succeeded", n, s.TenantID), func() bool {
		jobs := w.jobsOf(s)
		for _, j := range jobs {
			if j.Status != hub.JobSucceeded {
				return false
			}
		}
		return len(jobs) == n
	})
}

// checkHealed checks what s's destination received (event ids, in the
// order they arrived there) against what was produced (in arrival order):
// the hub p was never restarted, every event arrived, and those attempted
// once arrived once each and in arrival order (a failed attempt's job
// waits for its retry without holding the later ones,
// docs/delivery.md#ordering). It returns how many attempts failed and the
// errors they met.
func (w *world) checkHealed(p *proc, s hub.Subscription, produced, received []string) (failed int, errs []string) {
	w.t.Helper()
	select {
	case <-p.done:
		w.t.Fatalf("the hub exited:\n%s", p.logs)
	default:
	}
	attempts, why := map[string]int{}, map[string]bool{}
	for _, j := range w.jobsOf(s) {
		attempts[j.EventID] = j.Attempts
		if j.Attempts > 1 || j.Recoveries > 0 {
			failed += j.Attempts - 1
			_, as, err := w.db.GetJob(context.Background(), s.TenantID, j.ID)
			if err != nil {
				w.t.Fatal(err)
			}
			for _, a := range as {
				if a.Error != "" {
					why[a.Error] = true
				}
			}
		}
	}
	rank := map[string]int{}
	for i, id := range produced {
		rank[id] = i
	}
	seen := map[string]bool{}
	var once []int
	for _, id := range received {
		if attempts[id] == 1 {
			if seen[id] {
				w.t.Errorf("%s, attempted once, arrived twice", id)
			}
			once = append(once, rank[id])
		}
		seen[id] = true
	}
	var lost []string
	for _, id := range produced {
		if !seen[id] {
			lost = append(lost, id)
		}
	}
	if len(lost) > 0 {
		w.t.Errorf("%d events lost, e.g. %v", len(lost), lost[:min(5, len(lost))])
	}
	if !sort.IntsAreSorted(once) {
		w.t.Errorf("the events attempted once arrived out of arrival order")
	}
	for e := range why {
		errs = append(errs, e)
	}
	sort.Strings(errs)
	if strings.Contains(p.logs.String(), `"level":"ERROR"`) {
		w.t.Errorf("the hub logged errors:\n%s", p.logs)
	}
	return failed, errs
}

// recordIDs are the ce-ids of records, in order.
func recordIDs(recs []*kgo.Record) []string {
	var ids []string
	for _, r := range recs {
		for _, h := range r.Headers {
			if h.Key == "ce-id" {
				ids = append(ids, string(h.Value))
			}
		}
	}
	return ids
}
