package testkit

import (
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchSends measures a destination driver's sends: for each in-flight
// level (1: an ordered subscription; 64: one destination's in-flight
// share), a sub-benchmark sets up with setup, which returns one send (of
// the message numbered i), sends one to warm up, then sends b.N from
// level × GOMAXPROCS goroutines, each waiting for its acknowledgement, and
// reports deliveries/s.
func BenchSends(b *testing.B, setup func(b *testing.B) (send func(i string) error)) {
	for _, par := range []int{1, 64} {
		b.Run("in_flight="+strconv.Itoa(par), func(b *testing.B) {
			send := setup(b)
			if err := send("warm"); err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			b.SetParallelism(par)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := send(strconv.FormatInt(n.Add(1), 10)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}
