// Package hub is the domain of streaming-hub: events, tenants, rejections,
// verdicts, topic naming and the error codes every other package speaks.
//
// It imports only the standard library. Each subpackage is named after what it
// talks to or does: ingest (Kafka in), store (the database), api (HTTP),
// dispatch (webhooks out).
package hub
