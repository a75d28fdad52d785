package kafka_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/kafka"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
	"github.com/lerianstudio/streaming-hub/internal/webhook"
)

// BenchmarkSend produces to an in-process kfake cluster through the
// Producer, each send waiting for its acks=all acknowledgement: one at a
// time (an ordered subscription, max_in_flight 1) and 64 at once (one
// destination's in-flight share). The broker shares the process and its
// cores. go test -bench Send -run ^$ ./internal/destination/kafka/
func BenchmarkSend(b *testing.B) {
	for _, par := range []int{1, 64} {
		b.Run("in_flight="+strconv.Itoa(par), func(b *testing.B) {
			cluster := testkit.KafkaWith(b, 3, []string{"t"})
			d := webhook.NewDialer(webhook.ClientOptions{AllowPrivate: true})
			p, err := kafka.New(kafka.Options{Dial: d.DialContext, Timeout: 10 * time.Second})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { p.Close() })
			tg := destination.Target{Destination: hub.Destination{Type: hub.DestinationKafka, Brokers: cluster.ListenAddrs(), Topic: "t"}}
			body := make([]byte, 512)
			one := func(i string) error {
				ctx, cancel := context.WithTimeout(context.Background(), testkit.Patience)
				defer cancel()
				return p.Send(ctx, tg, destination.Message{ID: "evt-" + i, EventType: "transaction.posted", TenantID: "acme",
					ContentType: "application/json", Body: body, Headers: map[string]string{"ce-id": "evt-" + i, "X-Lerian-Delivery-Id": "att_" + i}})
			}
			if err := one("warm"); err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			b.SetParallelism(par) // par × GOMAXPROCS goroutines
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := one(strconv.FormatInt(n.Add(1), 10)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}
