package dispatch_test

import (
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
)

// A broker publish's span says where it went with the messaging
// conventions, and never carries the broker's credentials.
func TestBrokerSpan_NamesTheSystemAndDestinationWithoutCredentials(t *testing.T) {
	for _, c := range []struct {
		dest             hub.Destination
		name, system, to string
		host             string
	}{
		{hub.Destination{Type: hub.DestinationRabbitMQ, URL: "amqps://mq.acme.example:5671/vhost", Exchange: "payments"},
			"send payments", "rabbitmq", "payments", "mq.acme.example"},
		{hub.Destination{Type: hub.DestinationKafka, Brokers: []string{"k1.acme.example:9093", "k2.acme.example:9093"}, Topic: "acme.events",
			SASLMechanism: "SCRAM-SHA-512", SASLUsername: "acme"},
			"send acme.events", "kafka", "acme.events", "k1.acme.example"},
	} {
		name, attrs := dispatch.BrokerSpan(c.dest)
		got := map[string]string{}
		for _, kv := range attrs {
			got[string(kv.Key)] = kv.Value.Emit()
		}
		if name != c.name || got["messaging.system"] != c.system || got["messaging.destination.name"] != c.to ||
			got["server.address"] != c.host || got["messaging.operation.type"] != "send" {
			t.Errorf("%s: span %q %v", c.dest.Type, name, got)
		}
		for k, v := range got {
			if k == "url.full" || v == "acme" {
				t.Errorf("%s: span carries %s=%q", c.dest.Type, k, v)
			}
		}
	}
}
