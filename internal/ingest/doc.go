// Package ingest reads CloudEvents from Kafka into the event inbox: it parses
// each record's ce- headers into a verdict (accept, reject, discard), persists
// each partition's records in one store transaction, and commits that
// partition's offset only after the transaction commits.
package ingest
