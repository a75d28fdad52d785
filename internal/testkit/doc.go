// Package testkit gives tests real parts: a fresh PostgreSQL schema or SQLite
// file per test, an in-process Kafka broker, and a fake clock. Tests that need
// a service read STREAMING_HUB_TEST_POSTGRES_URL / STREAMING_HUB_TEST_REDIS_URL
// and skip, saying so, when it is unset.
package testkit
