package rabbitmq_test

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// BenchmarkPublish publishes to the real RabbitMQ through the Publisher,
// each publish waiting for its confirm: one at a time (an ordered
// subscription, max_in_flight 1) and 64 at once (one destination's
// in-flight share). go test -bench Publish -run ^$ ./internal/destination/rabbitmq/
func BenchmarkPublish(b *testing.B) {
	for _, par := range []int{1, 64} {
		b.Run("in_flight="+strconv.Itoa(par), func(b *testing.B) {
			r := testkit.NewRabbit(b, "#")
			p := publisher(b, "bench-"+testkit.UniqueName())
			tg := target(b, r, "{type}")
			if err := send(b, p, tg, message("warm", "warm")); err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			b.SetParallelism(par) // par × GOMAXPROCS goroutines
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := strconv.FormatInt(n.Add(1), 10)
					if err := send(b, p, tg, message("evt-"+i, "att_"+i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}
