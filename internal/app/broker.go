package app

import (
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// DevTopic is seeded in dev mode: the topic of Midaz's transaction.posted.
const DevTopic = "lerian.streaming.ledger_transaction.posted"

// startBroker starts dev mode's embedded Kafka-protocol broker on
// STREAMING_HUB_DEV_KAFKA_ADDR. Any Kafka client (kcat, librdkafka,
// franz-go) can produce to it; topics are created on first produce.
func (h *Hub) startBroker() error {
	addr := h.Config.DevKafkaAddr
	b, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, addr) }),
		kfake.AllowAutoTopicCreation(),
		// The consumer joins its group (and /readyz turns 200) only once a
		// topic matches; seed the one the README produces to.
		kfake.SeedTopics(1, DevTopic),
		// One partition: a tenant's events keep their order whatever key
		// a hand-run producer uses.
		kfake.DefaultNumPartitions(1),
		kfake.GroupMinSessionTimeout(time.Second),
	)
	if err != nil {
		return fmt.Errorf("STREAMING_HUB_DEV_KAFKA_ADDR: embedded Kafka on %s: %w", addr, err)
	}
	h.Broker = b
	h.Config.Ingest.Brokers = b.ListenAddrs()
	return nil
}
