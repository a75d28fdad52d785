package ingest_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/ingest"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

var quarantineTopic = config.DefaultQuarantineTopic

// readTopic reads topic from its start until it holds n records (and a
// moment more, so a record too many shows), with a client of its own.
func readTopic(t *testing.T, kafka *kfake.Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	deadline := time.Now().Add(testkit.Patience)
	for len(got) < n && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got = append(got, cl.PollFetches(ctx).Records()...)
		cancel()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	got = append(got, cl.PollFetches(ctx).Records()...)
	cancel()
	if len(got) != n {
		t.Fatalf("%s holds %d records, want %d", topic, len(got), n)
	}
	return got
}

// header is the value of the header named k, and whether it is there
// exactly once.
func header(r *kgo.Record, k string) (string, bool) {
	var v string
	n := 0
	for _, h := range r.Headers {
		if h.Key == k {
			v, n = string(h.Value), n+1
		}
	}
	return v, n == 1
}

// endOffset is topic's partition 0 end offset (0 when the topic does not
// exist yet).
func endOffset(t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok || o.Err != nil {
		return 0
	}
	return o.Offset
}

// Every record ingest refuses, of each cause kind the hub has, is on the
// quarantine topic with its value, its original headers and lib-streaming
// v3's forensic headers, before the offset past it is committed; what is
// discarded (unknown or inactive tenant, duplicate, system event) and what
// is accepted is not.
func TestQuarantine_EachRefusalLandsWithItsHeadersBeforeItsOffsetIsCommitted(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		s := d.Open(t, store.Options{})
		tenants(t, s, "acme", "sleepy")
		kafka := testkit.Kafka(t, 1, topic)
		prod := testkit.Producer(t, kafka)
		adm := kadm.NewClient(prod)
		cfg := consumerConfig(kafka.ListenAddrs(), s)
		cfg.MaxRecordBytes = 256
		cfg.MaxBatch = 3 // several batches: each is checked at its commit
		cfg.Signatures.Keys = []config.SignatureKey{{ID: "k1", Source: "//midaz/ledger", Secret: bytes.Repeat([]byte{7}, 32)}}
		// Just before each commit, the quarantine topic must already hold
		// every refusal persisted so far.
		var mu sync.Mutex
		var early []string
		cfg.AfterPersist = func(string, int32) {
			rej, err := s.ListRejections(context.Background(), store.ListRejectionsParams{Limit: 100})
			if err != nil {
				t.Error(err)
				return
			}
			if q := endOffset(t, adm, quarantineTopic); q < int64(len(rej)) {
				mu.Lock()
				early = append(early, fmt.Sprintf("%d rejections stored, %d quarantined", len(rej), q))
				mu.Unlock()
			}
		}
		startConsumer(t, cfg)

		h := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
		codec := testkit.CERecord(topic, 0, "acme", "codec-1")
		codec.Headers = codec.Headers[:3] // no ce-type onwards
		codec.Headers = append(codec.Headers, h("x-other", "kept"))
		reserved := testkit.CERecord(topic, 0, "acme", "reserved-1")
		for i, hd := range reserved.Headers {
			if hd.Key == "ce-type" {
				reserved.Headers[i].Value = []byte("studio.lerian.hub.subscription.disabled")
			}
		}
		unknownKey := testkit.CERecord(topic, 0, "acme", "sig-1", h("ce-sigkid", "nobody"), h("ce-sig", "v1.AAAA"))
		big := testkit.CERecord(topic, 0, "acme", "big-1")
		big.Value = bytes.Repeat([]byte("x"), 300)
		system := testkit.CERecord(topic, 0, "", "sys-1", h("ce-systemevent", "true"))
		system.Headers = append(system.Headers[:5:5], system.Headers[6:]...) // no ce-tenantid
		recs := []*kgo.Record{
			testkit.CERecord(topic, 0, "acme", "ok-1"), // 0
			codec,      // 1 codec
			reserved,   // 2 source_mismatch (the hub's reserved types)
			unknownKey, // 3 source_mismatch (signature_unknown_key)
			big,        // 4 handler (value over the limit)
			testkit.CERecord(topic, 0, "nobody", "n-1"), // 5 discarded: unknown tenant
			testkit.CERecord(topic, 0, "sleepy", "s-1"), // 6 discarded: inactive tenant
			testkit.CERecord(topic, 0, "acme", "ok-1"),  // 7 discarded: duplicate
			system, // 8 discarded: system event
			testkit.CERecord(topic, 0, "acme", "ok-2"), // 9
		}
		testkit.Produce(t, prod, recs...)
		testkit.WaitFor(t, "every offset committed", func() bool {
			return testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0] == int64(len(recs))
		})
		mu.Lock()
		if len(early) > 0 {
			t.Errorf("offsets committed before their refusals were quarantined: %v", early)
		}
		mu.Unlock()

		got := readTopic(t, kafka, quarantineTopic, 4)
		rej, err := s.ListRejections(context.Background(), store.ListRejectionsParams{Limit: 100})
		if err != nil || len(rej) != 4 {
			t.Fatalf("rejections = %d, %v", len(rej), err)
		}
		reasons := map[int64]string{}
		for _, r := range rej {
			reasons[r.Offset] = r.Reason
		}
		want := []struct {
			offset      int64
			kind, class string
		}{
			{1, "codec", "validation_error"},
			{2, "source_mismatch", "validation_error"},
			{3, "source_mismatch", "auth_error"},
			{4, "handler", "serialization_error"},
		}
		for i, w := range want {
			q, src := got[i], recs[w.offset]
			for k, v := range map[string]string{
				"x-lerian-dlq-source-topic":     topic,
				"x-lerian-dlq-source-partition": "0",
				"x-lerian-dlq-source-offset":    strconv.FormatInt(w.offset, 10),
				"x-lerian-dlq-cause-kind":       w.kind,
				"x-lerian-dlq-error-class":      w.class,
				"x-lerian-dlq-error-message":    reasons[w.offset],
				"x-lerian-dlq-retry-count":      "0",
				"x-lerian-dlq-producer-id":      "streaming-hub.test",
			} {
				if got, once := header(q, k); got != v || !once {
					t.Errorf("record at offset %d: %s = %q (once: %v), want %q", w.offset, k, got, once, v)
				}
			}
			if at, _ := header(q, "x-lerian-dlq-first-failure-at"); !validTime(at) {
				t.Errorf("record at offset %d: x-lerian-dlq-first-failure-at = %q", w.offset, at)
			}
			if _, omitted := header(q, "x-lerian-dlq-payload-omitted"); omitted {
				t.Errorf("record at offset %d: payload omitted", w.offset)
			}
			if !bytes.Equal(q.Value, src.Value) || !bytes.Equal(q.Key, src.Key) {
				t.Errorf("record at offset %d: value %q key %q, want the original", w.offset, q.Value, q.Key)
			}
			for _, oh := range src.Headers {
				if v, _ := header(q, oh.Key); v != string(oh.Value) {
					t.Errorf("record at offset %d: original header %s = %q, want %q", w.offset, oh.Key, v, oh.Value)
				}
			}
		}
		for kind, n := range map[string]float64{"codec": 1, "source_mismatch": 2, "handler": 1, "unhandled_key": 0} {
			if got := testutil.ToFloat64(cfg.Metrics.ConsumerDLQ.WithLabelValues(kind)); got != n {
				t.Errorf("streaming_consumer_dlq_total{cause_kind=%q} = %v, want %v", kind, got, n)
			}
		}
		if got := ids(inbox(t, s, "acme")); got != "[ok-1#1 ok-2#2]" {
			t.Errorf("acme's inbox = %s", got)
		}
	})
}

func validTime(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

// A refused record too large for the quarantine topic goes there without
// its value, marked x-lerian-dlq-payload-omitted: true with its size; its
// partition goes on.
func TestQuarantine_PastTheBrokersSizeTheValueIsOmitted(t *testing.T) {
	testkit.Long(t)
	s := testkit.OpenSQLite(t, store.Options{})
	tenants(t, s, "acme")
	kafka := testkit.Kafka(t, 1, topic)
	prod := testkit.Producer(t, kafka)
	ctx := context.Background()
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("4096")}, quarantineTopic); err != nil {
		t.Fatal(err)
	}
	cfg := consumerConfig(kafka.ListenAddrs(), s)
	startConsumer(t, cfg)
	big := testkit.CERecord(topic, 0, "acme", "big-1")
	big.Headers = big.Headers[:3]    // refused: codec
	big.Value = make([]byte, 20_000) // incompressible: the producer compresses
	rand.NewChaCha8([32]byte{1}).Read(big.Value)
	testkit.Produce(t, prod, big, testkit.CERecord(topic, 0, "acme", "ok-1"))
	testkit.WaitFor(t, "both offsets committed", func() bool {
		return testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0] == 2
	})
	q := readTopic(t, kafka, quarantineTopic, 1)[0]
	if len(q.Value) != 0 {
		t.Errorf("quarantined value of %d bytes, want none", len(q.Value))
	}
	for k, v := range map[string]string{
		"x-lerian-dlq-payload-omitted": "true",
		"x-lerian-dlq-payload-bytes":   "20000",
		"x-lerian-dlq-source-offset":   "0",
		"x-lerian-dlq-cause-kind":      "codec",
		"ce-id":                        "big-1",
	} {
		if got, once := header(q, k); got != v || !once {
			t.Errorf("%s = %q (once: %v), want %q", k, got, once, v)
		}
	}
	if got := ids(inbox(t, s, "acme")); got != "[ok-1#1]" {
		t.Errorf("inbox = %s", got)
	}
}

// The broker's max.message.bytes bounds a produce request's batch, not a
// record: refused records read together, each of which fits the quarantine
// topic alone, keep their values even when together they do not fit, and
// only the one that does not fit alone goes without its value, as
// lib-streaming v3 quarantines one record at a time
// (docs/wire-contract.md#quarantine-on-kafka). Their partition goes on.
func TestQuarantine_OnlyARecordTooLargeAloneLosesItsValue(t *testing.T) {
	testkit.Long(t)
	s := testkit.OpenSQLite(t, store.Options{})
	tenants(t, s, "acme")
	kafka := testkit.Kafka(t, 1, topic)
	prod := testkit.Producer(t, kafka)
	ctx := context.Background()
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("2600")}, quarantineTopic); err != nil {
		t.Fatal(err)
	}
	cfg := consumerConfig(kafka.ListenAddrs(), s)
	noise := rand.NewChaCha8([32]byte{2}) // incompressible values: the producer compresses
	refused := func(id string, n int) *kgo.Record {
		r := testkit.CERecord(topic, 0, "acme", id)
		r.Headers = r.Headers[:3] // refused: codec
		r.Value = make([]byte, n)
		noise.Read(r.Value)
		return r
	}
	// Six copies of about 2 KiB: each fits alone, no two fit together.
	var recs []*kgo.Record
	for i := range 6 {
		recs = append(recs, refused(fmt.Sprintf("small-%d", i), 1500))
	}
	recs = append(recs, refused("big-1", 20_000), testkit.CERecord(topic, 0, "acme", "ok-1"))
	testkit.Produce(t, prod, recs...) // one produce: read in one batch
	startConsumer(t, cfg)
	testkit.WaitFor(t, "every offset committed", func() bool {
		return testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0] == int64(len(recs))
	})
	got := readTopic(t, kafka, quarantineTopic, 7)
	for _, q := range got {
		id, _ := header(q, "ce-id")
		omitted, _ := header(q, "x-lerian-dlq-payload-omitted")
		off, _ := header(q, "x-lerian-dlq-source-offset")
		switch {
		case id == "big-1":
			if omitted != "true" || len(q.Value) != 0 || off != "6" {
				t.Errorf("%s: payload omitted %q, %d value bytes, source offset %s; want true, none, 6", id, omitted, len(q.Value), off)
			}
		case strings.HasPrefix(id, "small-"):
			if omitted != "" || len(q.Value) != 1500 || off != id[len("small-"):] {
				t.Errorf("%s: payload omitted %q, %d value bytes, source offset %s; want its 1500 bytes, no mark, %s",
					id, omitted, len(q.Value), off, id[len("small-"):])
			}
		default:
			t.Errorf("quarantined %q", id)
		}
	}
	if got := ids(inbox(t, s, "acme")); got != "[ok-1#1]" {
		t.Errorf("inbox = %s", got)
	}
}

// refuseProduce makes kafka refuse every produce to topic while refusing
// is set (TOPIC_AUTHORIZATION_FAILED: an ACL that does not let the hub
// write its quarantine), and counts the refusals.
// The topic must exist: newer produce requests name it by its id.
func refuseProduce(kafka *kfake.Cluster, topic string, refusing *atomic.Bool, refused *atomic.Int64) {
	id := kafka.TopicInfo(topic).TopicID
	kafka.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		kafka.KeepControl()
		pr := req.(*kmsg.ProduceRequest)
		if !refusing.Load() || len(pr.Topics) == 0 || (pr.Topics[0].Topic != topic && pr.Topics[0].TopicID != id) {
			return nil, nil, false
		}
		refused.Add(1)
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range pr.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
}

// A broker that refuses the quarantine holds the partition as a database
// outage does: nothing of the batch is stored or committed, /readyz names
// the partition and the quarantine once it has failed for StallAfter; once
// the broker takes it, the refusal is quarantined once, the batch stored
// and the offset committed. Nothing is lost.
func TestQuarantine_ABrokerRefusingItHoldsThePartitionUntilItHeals(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		s := d.Open(t, store.Options{})
		tenants(t, s, "acme")
		kafka := testkit.Kafka(t, 1, topic, quarantineTopic)
		var refusing atomic.Bool
		var refused atomic.Int64
		refusing.Store(true)
		refuseProduce(kafka, quarantineTopic, &refusing, &refused)
		prod := testkit.Producer(t, kafka)
		cfg := consumerConfig(kafka.ListenAddrs(), s)
		clock := testkit.NewClock()
		cfg.Now = clock.Now
		c, _ := startConsumer(t, cfg)

		bad := testkit.CERecord(topic, 0, "acme", "bad-1")
		bad.Headers = bad.Headers[:3]
		testkit.Produce(t, prod, testkit.CERecord(topic, 0, "acme", "ok-1"), bad, testkit.CERecord(topic, 0, "acme", "ok-2"))
		testkit.WaitFor(t, "the broker to refuse the quarantine three times", func() bool { return refused.Load() >= 3 })

		if off, ok := testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0]; ok {
			t.Fatalf("offset %d committed while the quarantine is refused", off)
		}
		if got := inbox(t, s, "acme"); len(got) != 0 {
			t.Fatalf("batch stored while its quarantine is refused: %s", ids(got))
		}
		if rej, _ := s.ListRejections(context.Background(), store.ListRejectionsParams{}); len(rej) != 0 {
			t.Fatalf("rejection stored while its quarantine is refused: %+v", rej)
		}
		clock.Advance(cfg.StallAfter + time.Second)
		err := c.Stalled(context.Background())
		if err == nil || !strings.Contains(err.Error(), topic+"/0") || !strings.Contains(err.Error(), "quarantine topic "+quarantineTopic) {
			t.Fatalf("readiness while the quarantine is refused: %v", err)
		}
		if got := testutil.ToFloat64(cfg.Metrics.ConsumerDLQFailed); got < 1 {
			t.Errorf("streaming_consumer_dlq_publish_failed_total = %v", got)
		}

		refusing.Store(false) // the ACL is fixed
		testkit.WaitFor(t, "offset 3 committed after the broker healed", func() bool {
			return testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0] == 3
		})
		if err := c.Stalled(context.Background()); err != nil {
			t.Fatalf("readiness after the broker healed: %v", err)
		}
		q := readTopic(t, kafka, quarantineTopic, 1)[0]
		if v, _ := header(q, "x-lerian-dlq-source-offset"); v != "1" {
			t.Errorf("quarantined source offset %q, want 1", v)
		}
		if got := ids(inbox(t, s, "acme")); got != "[ok-1#1 ok-2#2]" {
			t.Errorf("inbox = %s", got)
		}
		if rej, _ := s.ListRejections(context.Background(), store.ListRejectionsParams{}); len(rej) != 1 || rej[0].Offset != 1 {
			t.Errorf("rejections = %+v", rej)
		}
		if got := testutil.ToFloat64(cfg.Metrics.ConsumerDLQ.WithLabelValues("codec")); got != 1 {
			t.Errorf("streaming_consumer_dlq_total{cause_kind=codec} = %v, want 1", got)
		}
	})
}

// The hub never reads its own quarantine topic, whatever it is named and
// whatever the ingest pattern says; nor does the consumer of the
// producers' DLQ topics.
func TestQuarantine_TheHubNeverReadsItsOwnQuarantine(t *testing.T) {
	testkit.Long(t)
	for _, q := range []string{config.DefaultQuarantineTopic, "lerian.streaming.hub-quarantine"} {
		t.Run(q, func(t *testing.T) {
			s := testkit.OpenSQLite(t, store.Options{})
			tenants(t, s, "acme")
			kafka := testkit.Kafka(t, 1, topic, q, "lerian.streaming.ledger.dlq")
			prod := testkit.Producer(t, kafka)
			testkit.Produce(t, prod, testkit.CERecord(q, 0, "acme", "in-quarantine"), testkit.CERecord(topic, 0, "acme", "event"))
			cfg := consumerConfig(kafka.ListenAddrs(), s)
			cfg.QuarantineTopic = q
			cfg.TopicsRegex = `^lerian\.streaming\..*`
			c, _ := startConsumer(t, cfg)
			testkit.WaitFor(t, "the event", func() bool { return len(inbox(t, s, "acme")) >= 1 })
			if got := fmt.Sprint(c.Client().GetConsumeTopics()); got != "["+topic+"]" {
				t.Fatalf("consuming %s", got)
			}
			if got := ids(inbox(t, s, "acme")); got != "[event#1]" {
				t.Fatalf("inbox = %s", got)
			}

			dcfg := ingest.DLQConfig{Ingest: cfg.Ingest, Store: s, Metrics: cfg.Metrics}
			dcfg.DLQGroup = "streaming-hub-dlq.test"
			dlq, err := ingest.NewDLQ(dcfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); dlq.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			testkit.WaitFor(t, "the DLQ consumer to see the producers' DLQ topic", func() bool {
				return len(dlq.Client().GetConsumeTopics()) > 0
			})
			if got := fmt.Sprint(dlq.Client().GetConsumeTopics()); got != "[lerian.streaming.ledger.dlq]" {
				t.Fatalf("the DLQ consumer reads %s", got)
			}
		})
	}
}

// STREAMING_HUB_QUARANTINE_TOPIC empty: refusals are only in the rejection
// log, and nothing is produced.
func TestQuarantine_OffWhenTheTopicIsEmpty(t *testing.T) {
	testkit.Long(t)
	s := testkit.OpenSQLite(t, store.Options{})
	tenants(t, s, "acme")
	kafka := testkit.Kafka(t, 1, topic)
	prod := testkit.Producer(t, kafka)
	cfg := consumerConfig(kafka.ListenAddrs(), s)
	cfg.QuarantineTopic = ""
	startConsumer(t, cfg)
	bad := testkit.CERecord(topic, 0, "acme", "bad-1")
	bad.Headers = bad.Headers[:3]
	testkit.Produce(t, prod, bad)
	testkit.WaitFor(t, "offset 1 committed", func() bool {
		return testkit.CommittedOffsets(t, prod, "streaming-hub.test", topic)[0] == 1
	})
	if n := endOffset(t, kadm.NewClient(prod), quarantineTopic); n != 0 {
		t.Fatalf("quarantine topic holds %d records with the quarantine off", n)
	}
	if rej, _ := s.ListRejections(context.Background(), store.ListRejectionsParams{}); len(rej) != 1 {
		t.Fatalf("rejections = %+v", rej)
	}
}
