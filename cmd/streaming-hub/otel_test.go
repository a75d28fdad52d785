package main

import (
	"strings"
	"testing"
)

// A bad OTEL_* value stops the start with one line naming the variable,
// before anything is opened.
func TestServe_BadOTELVariableIsOneLineNamingIt(t *testing.T) {
	code, _, errOut := runCmd(map[string]string{
		"STREAMING_HUB_DATABASE_URL":  "postgres://nowhere/db",
		"STREAMING_HUB_KAFKA_BROKERS": "k:9092",
		"STREAMING_HUB_ADMIN_TOKEN":   "admin-token-long-enough",
		"STREAMING_HUB_KEK":           "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
		"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
	}, "serve")
	if code != exitUsage || strings.Count(errOut, "\n") != 1 ||
		!strings.HasPrefix(errOut, "streaming-hub: OTEL_EXPORTER_OTLP_PROTOCOL: must be grpc or http/protobuf") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
