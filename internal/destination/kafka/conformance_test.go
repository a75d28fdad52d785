package kafka_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/destinationtest"
	"github.com/lerianstudio/streaming-hub/internal/destination/kafka"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The Kafka driver passes the conformance suite every driver does: a
// kfake topic read from its start, and brokers on a closed port.
func TestKafka_Conformance(t *testing.T) {
	testkit.Long(t)
	cluster := testkit.KafkaWith(t, 1, []string{"t"})
	reader, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	d := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	p, err := kafka.New(kafka.Options{Dial: d.DialContext, Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	destinationtest.Run(t, destinationtest.Harness{
		Driver:   p,
		Target:   destination.Target{Destination: hub.Destination{Type: hub.DestinationKafka, Brokers: cluster.ListenAddrs(), Topic: "t"}},
		Refusing: destination.Target{Destination: hub.Destination{Type: hub.DestinationKafka, Brokers: []string{closed}, Topic: "t"}},
		Timeout:  5 * time.Second,
		Received: func(t *testing.T, n int) []destinationtest.Delivered {
			var out []destinationtest.Delivered
			testkit.WaitFor(t, "records on t", func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
				defer cancel()
				for _, r := range reader.PollFetches(ctx).Records() {
					h := map[string]string{}
					for _, rh := range r.Headers {
						h[rh.Key] = string(rh.Value)
					}
					if string(r.Key) != "acme" {
						t.Errorf("record key %q, want the tenant", r.Key)
					}
					out = append(out, destinationtest.Delivered{Body: r.Value, Headers: h})
				}
				return len(out) >= n
			})
			return out
		},
	})
}
