package rabbitmq_test

import (
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// BenchmarkPublish publishes to the real RabbitMQ through the Publisher,
// each publish waiting for its confirm: one at a time (an ordered
// subscription, max_in_flight 1) and 64 at once (one destination's
// in-flight share). go test -bench Publish -run ^$ ./internal/destination/rabbitmq/
func BenchmarkPublish(b *testing.B) {
	testkit.BenchSends(b, func(b *testing.B) func(string) error {
		r := testkit.NewRabbit(b, "#")
		p := publisher(b, "bench-"+testkit.UniqueName())
		tg := target(b, r, "{type}")
		return func(i string) error { return send(b, p, tg, message("evt-"+i, "att_"+i)) }
	})
}
