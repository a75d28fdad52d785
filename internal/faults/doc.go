// Package faults is the fault-injection suite: it runs real streaming-hub
// processes against PostgreSQL, an in-process Kafka broker and a local
// sink, breaks things on purpose (kill -9, severed database connections, a
// flaky destination, several competing processes) and counts what was
// produced, delivered, lost and duplicated. Each scenario prints its figures.
//
//	STREAMING_HUB_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test \
//	go test -tags faults -v -count=1 -timeout 20m ./internal/faults
package faults
