package ingest_test

import (
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/ingest"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// A package receives a complete configuration: a zero setting is a
// programming error that names the field, never a silent default.
func TestNew_AnIncompleteConfigNamesTheField(t *testing.T) {
	complete := func() ingest.Config { return consumerConfig([]string{"127.0.0.1:1"}, struct{ store.Store }{}) }
	for field, zero := range map[string]func(*ingest.Config){
		"Brokers":        func(c *ingest.Config) { c.Brokers = nil },
		"Group":          func(c *ingest.Config) { c.Group = "" },
		"TopicsRegex":    func(c *ingest.Config) { c.TopicsRegex = "" },
		"Store":          func(c *ingest.Config) { c.Store = nil },
		"Metrics":        func(c *ingest.Config) { c.Metrics = nil },
		"SessionTimeout": func(c *ingest.Config) { c.SessionTimeout = 0 },
		"MaxRecordBytes": func(c *ingest.Config) { c.MaxRecordBytes = 0 },
		"MaxBatch":       func(c *ingest.Config) { c.MaxBatch = 0 },
		"MaxBacklog":     func(c *ingest.Config) { c.MaxBacklog = 0 },
		"FetchMaxWait":   func(c *ingest.Config) { c.FetchMaxWait = 0 },
		"RetryMin":       func(c *ingest.Config) { c.RetryMin = 0 },
		"RetryMax":       func(c *ingest.Config) { c.RetryMax = 0 },
		"WriteTimeout":   func(c *ingest.Config) { c.WriteTimeout = 0 },
	} {
		c := complete()
		zero(&c)
		if _, err := ingest.New(c); err == nil || !strings.Contains(err.Error(), "ingest.Config: "+field+" ") {
			t.Errorf("%s unset: err = %v, want one naming it", field, err)
		}
	}
}
