// Package hub is the domain of streaming-hub: events, tenants, rejections,
// verdicts, topic naming and the error codes every other package speaks.
//
// It imports only the standard library. With package consumer (the receiving
// side) it is the module's public API; everything else is under internal/,
// each package named after what it talks to or does: ingest (Kafka in),
// store (the database), api (HTTP), dispatch (deliveries out).
package hub
