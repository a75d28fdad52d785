package config

import (
	"strings"
	"testing"
)

// docs/wire-contract.md#quarantine-on-kafka: the quarantine topic defaults
// to lib-streaming's name of the hub's own DLQ, may be renamed, and set
// empty turns the quarantine off; a name Kafka would refuse stops the start.
func TestLoad_QuarantineTopic(t *testing.T) {
	lookup := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	c, err := LoadLookup(Serve, lookup(serveEnv()))
	if err != nil || c.Ingest.QuarantineTopic != "lerian.streaming.streaming-hub.dlq" {
		t.Fatalf("default quarantine topic %q, %v", c.Ingest.QuarantineTopic, err)
	}
	e := serveEnv()
	e["STREAMING_HUB_QUARANTINE_TOPIC"] = "hub.quarantine"
	if c, err := LoadLookup(Serve, lookup(e)); err != nil || c.Ingest.QuarantineTopic != "hub.quarantine" {
		t.Fatalf("quarantine topic %q, %v", c.Ingest.QuarantineTopic, err)
	}
	e["STREAMING_HUB_QUARANTINE_TOPIC"] = ""
	if c, err := LoadLookup(Serve, lookup(e)); err != nil || c.Ingest.QuarantineTopic != "" {
		t.Fatalf("set empty: quarantine topic %q, %v; want off", c.Ingest.QuarantineTopic, err)
	}
	e["STREAMING_HUB_QUARANTINE_TOPIC"] = "no spaces/allowed"
	if _, err := LoadLookup(Serve, lookup(e)); err == nil || !strings.Contains(err.Error(), "STREAMING_HUB_QUARANTINE_TOPIC") {
		t.Fatalf("a bad topic name: %v", err)
	}
}
