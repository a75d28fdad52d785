package hub

import "testing"

// A destination's address (the breaker's key) is the webhook URL, or the
// broker's address without credentials, vhost or topic.
func TestDestinationAddress(t *testing.T) {
	for _, c := range []struct {
		d    Destination
		want string
	}{
		{Destination{Type: DestinationWebhook, URL: "https://e.com/hook?x=1"}, "https://e.com/hook?x=1"},
		{Destination{Type: DestinationRabbitMQ, URL: "amqps://MQ.example.com:5671/prod"}, "amqps://mq.example.com:5671"},
		{Destination{Type: DestinationRabbitMQ, URL: "amqp://127.0.0.1:5672/"}, "amqp://127.0.0.1:5672"},
		{Destination{Type: DestinationKafka, Brokers: []string{"k1:9093", "K2:9093"}, Topic: "t"}, "kafka://k1:9093,k2:9093"},
		{Destination{Type: DestinationNATS, URL: "tls://NATS.example.com:4222", Subject: "events.x"}, "tls://nats.example.com:4222"},
		{Destination{Type: DestinationPubSub, Project: "acme-prod", Topic: "events"}, "pubsub://acme-prod"},
	} {
		if got := c.d.Address(); got != c.want {
			t.Errorf("%+v: Address() = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestValidateRateLimit(t *testing.T) {
	for n, ok := range map[int]bool{0: true, 1: true, 10000: true, -1: false, 10001: false} {
		if err := ValidateRateLimit(n); (err == nil) != ok {
			t.Errorf("ValidateRateLimit(%d) = %v", n, err)
		}
	}
}
