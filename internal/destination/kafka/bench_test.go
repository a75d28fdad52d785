package kafka_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/kafka"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// BenchmarkSend produces to an in-process kfake cluster through the
// Producer, each send waiting for its acks=all acknowledgement: one at a
// time (an ordered subscription, max_in_flight 1) and 64 at once (one
// destination's in-flight share). The broker shares the process and its
// cores. go test -bench Send -run ^$ ./internal/destination/kafka/
func BenchmarkSend(b *testing.B) {
	testkit.BenchSends(b, func(b *testing.B) func(string) error {
		cluster := testkit.KafkaWith(b, 3, []string{"t"})
		d := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
		p, err := kafka.New(kafka.Options{Dial: d.DialContext, Timeout: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close() })
		tg := destination.Target{Destination: hub.Destination{Type: hub.DestinationKafka, Brokers: cluster.ListenAddrs(), Topic: "t"}}
		body := make([]byte, 512)
		return func(i string) error {
			ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
			defer cancel()
			return p.Send(ctx, tg, destination.Message{ID: "evt-" + i, EventType: "transaction.posted", TenantID: "acme",
				ContentType: "application/json", Body: body, Headers: http.Header{"ce-id": {"evt-" + i}, "X-Lerian-Delivery-Id": {"att_" + i}}}).Err
		}
	})
}
