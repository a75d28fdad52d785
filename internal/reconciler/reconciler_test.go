package reconciler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/reconciler"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const (
	group    = "streaming-hub.test"
	ledger   = "lerian.streaming.ledger_transaction.posted" // declared and consumed
	crm      = "lerian.streaming.crm"                       // on the cluster, in no manifest, not consumed
	fees     = "lerian.streaming.fees"                      // declared, not on the cluster (yet)
	dlq      = "lerian.streaming.ledger.dlq"                // never consumed: not drift
	unrelate = "billing.invoices"                           // outside the pattern: not drift
)

func admin(t *testing.T, c *kfake.Cluster) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// consume joins group on the given topics, as the hub's ingest does, and
// waits until it is assigned partitions of each.
func consume(t *testing.T, c *kfake.Cluster, topics ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topics...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			cl.PollFetches(ctx)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; cl.Close() })
	adm := admin(t, c)
	testkit.WaitFor(t, "the group assigned", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		g, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return false
		}
		got := g.AssignedPartitions()
		for _, tp := range topics {
			if _, ok := got[tp]; !ok {
				return false
			}
		}
		return true
	})
}

func manifestOf(source, topic string) []byte {
	b, _ := json.Marshal(map[string]any{
		"version": "1.0.0", "publisher": map[string]string{"serviceName": source, "source": "//" + source}, "topic": topic,
		"events": []map[string]any{{"key": "x", "resourceType": "transaction", "eventType": "posted", "schemaVersion": "1.0.0"}},
	})
	return b
}

func newReconciler(t *testing.T, s reconciler.Store, adm *kadm.Client, logs *testkit.Buffer) (*reconciler.Reconciler, *metrics.Metrics) {
	t.Helper()
	m := metrics.New()
	r, err := reconciler.New(reconciler.Config{
		Reconciler:  config.Defaults(config.Serve).Reconciler,
		TopicsRegex: hub.DefaultTopicsRegex, Group: group, Admin: adm,
		Store: s, Metrics: m, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, m
}

func gauge(m *metrics.Metrics) string {
	var out []string
	for _, k := range []string{hub.DriftMissing, hub.DriftUnassigned, hub.DriftUndeclared} {
		for _, tp := range []string{ledger, crm, fees, dlq, unrelate} {
			if testutil.ToFloat64(m.TopicDrift.WithLabelValues(tp, k)) == 1 {
				out = append(out, tp+"/"+k)
			}
		}
	}
	m.TopicDrift.Reset() // WithLabelValues made the zero series; the next read starts clean
	return strings.Join(out, " ")
}

// The check compares the cluster, the group and the manifests while
// topics are created and deleted: the gauge holds the current
// differences, each appears in the log and in a hub.topics.drift event
// once, when it appears or resolves, not on every check.
func TestCheck_ReportsUndeclaredMissingAndUnassignedTopicsAsTheyChange(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ctx := context.Background()
		s := d.Open(t, store.Options{})
		if _, err := s.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"}); err != nil {
			t.Fatal(err)
		}
		c := testkit.Kafka(t, 2, ledger, crm, dlq, unrelate)
		adm := admin(t, c)
		consume(t, c, ledger)
		for src, topic := range map[string]string{"ledger": ledger, "fees": fees} {
			if err := s.RecordManifestFetch(ctx, "http://"+src+"/v1/streaming/manifest", time.Now(), manifestOf(src, topic), ""); err != nil {
				t.Fatal(err)
			}
		}
		logs := &testkit.Buffer{}
		r, m := newReconciler(t, s, adm, logs)

		check := func() []hub.TopicDrift {
			t.Helper()
			ran, drift, err := r.Check(ctx)
			if err != nil || !ran {
				t.Fatalf("Check = %v, %v", ran, err)
			}
			return drift
		}
		want := crm + "/unassigned " + crm + "/undeclared " + fees + "/missing"
		if got := fmt.Sprint(check()); got != fmt.Sprintf("[{%s unassigned} {%s undeclared} {%s missing}]", crm, crm, fees) {
			t.Fatalf("first check found %s", got)
		}
		if got := gauge(m); got != fees+"/missing "+crm+"/unassigned "+crm+"/undeclared" {
			t.Fatalf("gauge after the first check: %s (want %s)", got, want)
		}
		check() // nothing changed: nothing logged or told again
		if n := strings.Count(logs.String(), `"msg":"topic drift: `); n != 3 {
			t.Fatalf("%d drift log lines after two checks, want 3 (one per difference):\n%s", n, logs)
		}

		// The fees topic is made and the crm topic deleted.
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, fees); err != nil {
			t.Fatal(err)
		}
		if _, err := adm.DeleteTopics(ctx, crm); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, "the cluster's metadata to show both changes", func() bool {
			ts, err := adm.ListTopics(ctx)
			return err == nil && ts.Has(fees) && !ts.Has(crm)
		})
		if got := fmt.Sprint(check()); got != fmt.Sprintf("[{%s unassigned}]", fees) {
			t.Fatalf("after the changes: %s", got)
		}
		if got := gauge(m); got != fees+"/unassigned" {
			t.Fatalf("gauge after the changes: %s", got)
		}
		check()
		out := logs.String()
		if n := strings.Count(out, `"msg":"topic drift: `); n != 4 {
			t.Fatalf("%d drift log lines, want 4:\n%s", n, out)
		}
		if n := strings.Count(out, `"msg":"topic drift resolved: `); n != 3 {
			t.Fatalf("%d resolved log lines, want 3:\n%s", n, out)
		}

		evs, err := s.ListEvents(ctx, store.ListEventsParams{TenantID: "acme", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var drift []string
		for _, ev := range evs {
			if ev.EventType == hub.EventTopicsDrift {
				drift = append(drift, string(ev.Data))
			}
		}
		if len(drift) != 2 {
			t.Fatalf("%d hub.topics.drift events, want 2 (one per check that changed something): %v", len(drift), drift)
		}
		if !strings.Contains(drift[0], `{"topic":"`+fees+`","kind":"missing"}`) || !strings.Contains(drift[0], `"resolved":[]`) {
			t.Fatalf("first event: %s", drift[0])
		}
		if !strings.Contains(drift[1], `"detected":[{"topic":"`+fees+`","kind":"unassigned"}]`) ||
			!strings.Contains(drift[1], `{"topic":"`+crm+`","kind":"undeclared"}`) {
			t.Fatalf("second event: %s", drift[1])
		}
	})
}

// countingStore counts the checks that record at once, and holds the
// first one until the other replica has been refused the lock.
type countingStore struct {
	store.Store
	overlap *testkit.Overlap
}

func (c countingStore) RecordTopicDrift(ctx context.Context, current []hub.TopicDrift) (store.DriftChanges, error) {
	defer c.overlap.Enter()()
	return c.Store.RecordTopicDrift(ctx, current)
}

// Two replicas (two handles on one database) checking at the same time:
// never both at once; the one refused clears its gauge.
func TestCheck_OneReplicaAtATime(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		a, b := testkit.OpenTwice(t, d.Name, store.Options{})
		c := testkit.Kafka(t, 1, crm)
		var ran, skipped atomic.Int32
		overlap := testkit.NewOverlap()
		var wg sync.WaitGroup
		for _, s := range []store.Store{a, b} {
			r, m := newReconciler(t, countingStore{s, overlap}, admin(t, c), &testkit.Buffer{})
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					ok, _, err := r.Check(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						ran.Add(1)
						continue
					}
					skipped.Add(1)
					overlap.Contend()
					if got := testutil.CollectAndCount(m.TopicDrift); got != 0 {
						t.Errorf("a replica refused the lock reports %d drift series", got)
					}
				}
			}()
		}
		wg.Wait()
		if most := overlap.Most(); most != 1 {
			t.Fatalf("%d checks recorded at once, want 1", most)
		}
		if ran.Load() == 0 || skipped.Load() == 0 {
			t.Fatalf("ran %d, skipped %d: the replicas never contended", ran.Load(), skipped.Load())
		}
	})
}
