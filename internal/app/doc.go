// Package app wires the hub together from its configuration: store, ingest,
// API, and in dev mode an embedded Kafka broker. cmd/streaming-hub only
// parses flags and signals; tests start a whole hub through this package.
package app
