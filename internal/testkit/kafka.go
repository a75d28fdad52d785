package testkit

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka starts an in-process Kafka-protocol broker (kfake) with the given
// topics, each with partitions partitions, closed when the test ends.
func Kafka(t testing.TB, partitions int32, topics ...string) *kfake.Cluster {
	t.Helper()
	return KafkaWith(t, partitions, topics)
}

// KafkaWith is Kafka with more broker options: kfake.TLS, kfake.EnableSASL,
// kfake.Superuser.
func KafkaWith(t testing.TB, partitions int32, topics []string, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{
		kfake.NumBrokers(1),
		kfake.SeedTopics(partitions, topics...),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(int(partitions)),
		// Lets tests that kill a member see it evicted in about a second.
		kfake.GroupMinSessionTimeout(100 * time.Millisecond),
	}, opts...)...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Producer returns a franz-go client that produces to c, records going to
// the partition they name; opts add to its options (TLS, SASL).
func Producer(t testing.TB, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.AllowAutoTopicCreation(),
	}, opts...)...)
	if err != nil {
		t.Fatalf("kafka producer: %v", err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// Produce sends records synchronously and fails the test on error.
func Produce(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Patience)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// CommittedOffsets returns the group's committed offsets for topic, by
// partition; a partition with no commit is absent.
func CommittedOffsets(t testing.TB, cl *kgo.Client, group, topic string) map[int32]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Patience)
	defer cancel()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	out := make(map[int32]int64)
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out
}

// CERecord builds a valid binary-mode CloudEvent record for tenant with ce-id
// id on topic/partition; extra headers are appended (or override by
// repetition, which the parser rejects when values differ).
func CERecord(topic string, partition int32, tenant, id string, extra ...kgo.RecordHeader) *kgo.Record {
	h := []kgo.RecordHeader{
		{Key: "ce-specversion", Value: []byte("1.0")},
		{Key: "ce-id", Value: []byte(id)},
		{Key: "ce-source", Value: []byte("//midaz/ledger")},
		{Key: "ce-type", Value: []byte("studio.lerian.transaction.posted")},
		{Key: "ce-time", Value: []byte("2026-11-30T12:00:00Z")},
		{Key: "ce-tenantid", Value: []byte(tenant)},
		{Key: "ce-schemaversion", Value: []byte("1.0.0")},
		{Key: "content-type", Value: []byte("application/json")},
	}
	return &kgo.Record{
		Topic:     topic,
		Partition: partition,
		Key:       []byte(tenant),
		Value:     []byte(`{"id":"` + id + `","amount":"10.00"}`),
		Headers:   append(h, extra...),
	}
}

// Patience is how long a test waits for something that should happen: a
// safety net against a hang, never a measure of speed. It is long because a
// loaded machine (two cores, a load average of 15, the race detector) can
// take seconds for what takes milliseconds alone, and a wait that holds
// only passes as soon as its condition does.
const Patience = 2 * time.Minute

// WaitFor polls cond every 10ms until it holds, failing the test after
// Patience. It is for waiting on real I/O (Kafka, HTTP, other goroutines),
// never on a clock: drive time with a fake Clock instead.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after %v", what, Patience)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Eventually is WaitFor with a deadline of its own; a deadline shorter than
// Patience is raised to it, since how long a wait takes depends on the
// machine and is not what a test asserts.
//
// Deprecated: use WaitFor.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(max(timeout, Patience))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after %v", what, max(timeout, Patience))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ReadRecords reads topic of c from the start until it has n records (opts
// add to the reader's options: SASL, TLS) and returns them, in order per
// partition.
func ReadRecords(t testing.TB, c *kfake.Cluster, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic)}, opts...)...)
	if err != nil {
		t.Fatalf("kafka reader: %v", err)
	}
	defer cl.Close()
	var got []*kgo.Record
	WaitFor(t, fmt.Sprintf("%d records on %s", n, topic), func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		got = append(got, cl.PollFetches(ctx).Records()...)
		return len(got) >= n
	})
	return got
}

// ReplaceableKafka is a kfake cluster on a fixed port that Replace swaps
// for a new one behind the same address: a tenant's cluster rebuilt, with
// its topics created again under new topic ids and no records.
type ReplaceableKafka struct {
	Addr       string // host:port, the same for every cluster
	t          testing.TB
	partitions int32
	topics     []string
	opts       []kfake.Opt

	mu sync.Mutex
	c  *kfake.Cluster
}

// NewReplaceableKafka starts the first cluster (KafkaWith's, on a free
// port of its own); the last one is closed when the test ends.
func NewReplaceableKafka(t testing.TB, partitions int32, topics []string, opts ...kfake.Opt) *ReplaceableKafka {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	k := &ReplaceableKafka{Addr: ln.Addr().String(), t: t, partitions: partitions, topics: topics,
		opts: append([]kfake.Opt{kfake.Ports(port)}, opts...)}
	k.c = KafkaWith(t, partitions, topics, k.opts...)
	return k
}

// Cluster is the cluster behind Addr now.
func (k *ReplaceableKafka) Cluster() *kfake.Cluster {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.c
}

// Replace closes the cluster and starts a new one at the same address,
// and returns it.
func (k *ReplaceableKafka) Replace() *kfake.Cluster {
	k.t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.c.Close()
	k.c = KafkaWith(k.t, k.partitions, k.topics, k.opts...)
	return k.c
}
