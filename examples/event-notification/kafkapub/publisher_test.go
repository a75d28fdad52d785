package kafkapub_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/internal/testenv"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/kafkapub"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/payments"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func newCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func newClient(t *testing.T, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.AllowAutoTopicCreation()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// The forwarder group reads the stream and produces each notification as a
// binary-mode CloudEvent the hub accepts; the record is consumed back and
// every header checked.
func TestForwarderPublishesBinaryCloudEventToKafka(t *testing.T) {
	t.Parallel()
	rdb, keys := testenv.Redis(t)
	store := testenv.NewStore(t, rdb, keys)
	ctx := t.Context()
	cluster := newCluster(t)

	pub, err := kafkapub.NewPublisher(newClient(t, cluster), kafkapub.Config{Tenant: "tenant-a"})
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := notify.NewReader(rdb, notify.ReaderConfig{
		Stream: keys.Stream(), Group: kafkapub.ForwarderGroup, Consumer: "forwarder-1",
	}, pub)
	if err != nil {
		t.Fatal(err)
	}

	c, err := store.Create(ctx, payments.NewPayment{AmountCents: 15000, Currency: "BRL", PayerAccount: "0001-1", PayeeAccount: "0002-2"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := store.Approve(ctx, c.Payment.ID)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fwd.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.New != 2 || res.Acked != 2 {
		t.Fatalf("forwarder pass: %s, want new=2 acked=2", res)
	}

	entry := testenv.Entries(t, rdb, keys.Stream())[1]
	ev, _, err := notify.Decode([]byte(entry.Values[notify.StreamField].(string)))
	if err != nil {
		t.Fatal(err)
	}

	topic, err := hub.Topic("payments", notify.TypePaymentApproved)
	if err != nil {
		t.Fatal(err)
	}
	if topic != "lerian.streaming.payments_payment.approved" {
		t.Fatalf("topic %q", topic)
	}
	consumer := newClient(t, cluster, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	pollCtx, cancel := context.WithTimeout(ctx, testkit.Patience)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) == 0 {
		fs := consumer.PollFetches(pollCtx)
		if err := pollCtx.Err(); err != nil {
			t.Fatalf("no record on %s: %v", topic, err)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		recs = append(recs, fs.Records()...)
	}
	if len(recs) != 1 {
		t.Fatalf("%d records on %s, want 1", len(recs), topic)
	}
	rec := recs[0]

	headers := map[string]string{}
	for _, h := range rec.Headers {
		if _, dup := headers[h.Key]; dup {
			t.Fatalf("header %s sent twice", h.Key)
		}
		headers[h.Key] = string(h.Value)
	}
	want := map[string]string{
		"ce-specversion":   "1.0",
		"ce-id":            a.EventID,
		"ce-source":        "//lerian.studio/payments",
		"ce-type":          "studio.lerian.payment.approved",
		"ce-time":          ev.Time.Format(time.RFC3339Nano),
		"ce-tenantid":      "tenant-a",
		"ce-schemaversion": "1.0.0",
		"ce-subject":       c.Payment.ID,
		"content-type":     "application/json",
	}
	for k, v := range want {
		if headers[k] != v {
			t.Errorf("header %s = %q, want %q", k, headers[k], v)
		}
	}
	if len(headers) != len(want) {
		t.Errorf("headers %v, want exactly %v", headers, want)
	}
	if ts, err := time.Parse(time.RFC3339, headers["ce-time"]); err != nil || !ts.Equal(ev.Time) {
		t.Errorf("ce-time %q is not the event's RFC 3339 time: %v", headers["ce-time"], err)
	}
	if _, err := hub.ParseCEType(headers["ce-type"]); err != nil {
		t.Errorf("ce-type rejected by the hub's parser: %v", err)
	}
	if string(rec.Key) != "tenant-a" {
		t.Errorf("record key %q, want the tenant", rec.Key)
	}
	var data map[string]any
	if err := json.Unmarshal(rec.Value, &data); err != nil {
		t.Fatalf("value %s: %v", rec.Value, err)
	}
	if len(data) != 2 || data["paymentId"] != c.Payment.ID || data["version"] != float64(2) {
		t.Fatalf("value %s, want exactly {paymentId, version: 2}", rec.Value)
	}
}

// Kafka unreachable: the produce fails, so the entry is not acknowledged and
// stays pending for the next pass.
func TestForwarderDoesNotAckWhenKafkaIsDown(t *testing.T) {
	t.Parallel()
	rdb, keys := testenv.Redis(t)
	store := testenv.NewStore(t, rdb, keys)
	ctx := t.Context()
	cluster := newCluster(t)
	cl := newClient(t, cluster)
	cluster.Close()

	pub, err := kafkapub.NewPublisher(cl, kafkapub.Config{Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := notify.NewReader(rdb, notify.ReaderConfig{
		Stream: keys.Stream(), Group: kafkapub.ForwarderGroup, Consumer: "forwarder-1",
	}, pub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Create(ctx, payments.NewPayment{AmountCents: 1, Currency: "BRL", PayerAccount: "a", PayeeAccount: "b"}); err != nil {
		t.Fatal(err)
	}
	res, err := fwd.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.New != 1 || res.Failed != 1 || res.Acked != 0 {
		t.Fatalf("pass with Kafka down: %s, want new=1 failed=1", res)
	}
	p, err := rdb.XPending(ctx, keys.Stream(), kafkapub.ForwarderGroup).Result()
	if err != nil || p.Count != 1 {
		t.Fatalf("XPENDING %+v, %v; want 1 pending", p, err)
	}
}

func TestPublisherConfigIsValidated(t *testing.T) {
	t.Parallel()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, cfg := range []kafkapub.Config{
		{Tenant: "bad tenant"},
		{SchemaVersion: "1.0"},
		{Service: "Pay Ments"},
		{Timeout: -time.Second},
	} {
		if _, err := kafkapub.NewPublisher(cl, cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
	pub, err := kafkapub.NewPublisher(cl, kafkapub.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := pub.Record(notify.Event{
		SpecVersion: "1.0", ID: "e1", Source: notify.DefaultSource, Type: notify.TypePaymentRefunded,
		Time: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Subject: "p1", Data: []byte(`{"paymentId":"p1","version":3}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Topic != "lerian.streaming.payments_payment.refunded" || string(rec.Key) != kafkapub.DefaultTenant {
		t.Fatalf("record topic %q key %q", rec.Topic, rec.Key)
	}
}
