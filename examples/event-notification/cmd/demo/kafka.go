package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/kafkapub"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
)

// (e) forward the same notifications to Kafka as binary-mode CloudEvents.
func (d *demo) forwardToKafka(ctx context.Context) error {
	d.section("(e) The same notifications forwarded to the hub's Kafka stream")
	brokers := strings.Split(d.cfg.kafka, ",")
	if d.cfg.kafka == "fake" {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
		if err != nil {
			return fmt.Errorf("start in-process Kafka: %w", err)
		}
		defer cluster.Close()
		brokers = cluster.ListenAddrs()
		d.say("  in-process Kafka (kfake) at %v", brokers)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.AllowAutoTopicCreation())
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	pub, err := kafkapub.NewPublisher(cl, kafkapub.Config{Tenant: d.cfg.tenant})
	if err != nil {
		return err
	}
	fwd, err := notify.NewReader(d.rdb, notify.ReaderConfig{
		Stream: d.keys.Stream(), Group: kafkapub.ForwarderGroup, Consumer: "forwarder-1",
	}, pub)
	if err != nil {
		return err
	}
	res, err := fwd.Pass(ctx)
	if err != nil {
		return err
	}
	d.say("  forwarder pass (XACK only after Kafka acknowledged): %s", res)
	if d.cfg.kafka != "fake" {
		return nil // a real cluster may hold other records: do not read it back
	}

	topic, err := hub.Topic(kafkapub.DefaultService, notify.TypePaymentApproved)
	if err != nil {
		return err
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return fmt.Errorf("kafka consumer: %w", err)
	}
	defer consumer.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	fs := consumer.PollFetches(pctx)
	if err := fs.Err0(); err != nil {
		return fmt.Errorf("read back %s: %w", topic, err)
	}
	recs := fs.Records()
	d.say("  %d records on %s; the first one:", len(recs), topic)
	if len(recs) == 0 {
		return nil
	}
	r := recs[0]
	d.say("    key   %s", r.Key)
	for _, h := range r.Headers {
		d.say("    %-17s %s", h.Key, h.Value)
	}
	d.say("    value %s", r.Value)
	return nil
}
