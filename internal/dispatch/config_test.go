package dispatch

import (
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/envelope"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
)

// A package receives a complete configuration: a zero setting is a
// programming error that names the field, never a silent default.
func TestNew_AnIncompleteConfigNamesTheField(t *testing.T) {
	complete := func() Config {
		return Config{Dispatch: config.Defaults(config.Serve).Dispatch, Store: struct{ Store }{},
			Keyring: &envelope.Keyring{}, Destinations: &destination.Registry{}, Metrics: metrics.New()}
	}
	if _, err := New(complete()); err != nil {
		t.Fatalf("the default configuration: %v", err)
	}
	for field, zero := range map[string]func(*Config){
		"Store":               func(c *Config) { c.Store = nil },
		"Metrics":             func(c *Config) { c.Metrics = nil },
		"Workers":             func(c *Config) { c.Workers = 0 },
		"ClaimBatch":          func(c *Config) { c.ClaimBatch = 0 },
		"IdleInterval":        func(c *Config) { c.IdleInterval = 0 },
		"Lease":               func(c *Config) { c.Lease = -1 },
		"PoisonThreshold":     func(c *Config) { c.PoisonThreshold = 0 },
		"MaintenanceInterval": func(c *Config) { c.MaintenanceInterval = 0 },
		"FlushSize":           func(c *Config) { c.FlushSize = 0 },
	} {
		c := complete()
		zero(&c)
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), "dispatch.Config: "+field+" ") {
			t.Errorf("%s unset: err = %v, want one naming it", field, err)
		}
	}
	if _, err := NewBreakers(config.Breaker{}, nil, metrics.New()); err == nil || !strings.Contains(err.Error(), "opts.Failures") {
		t.Errorf("breakers without settings: err = %v", err)
	}
}
