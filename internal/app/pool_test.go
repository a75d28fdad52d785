package app

import (
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination/webhook"
)

// A webhook host keeps an idle connection for every attempt a process may
// have in flight at its defaults: with fewer, unordered subscriptions on
// one host close and redial connections at every burst.
func TestWebhookPool_KeepsAConnectionPerAttemptInFlight(t *testing.T) {
	for _, mode := range []config.Mode{config.Serve, config.Dev} {
		if n := config.Defaults(mode).Dispatch.MaxInFlight; webhook.IdleConnsPerHost < n {
			t.Errorf("webhook.IdleConnsPerHost = %d, below the %d attempts in flight by default", webhook.IdleConnsPerHost, n)
		}
	}
}
