package testkit

import "testing"

// Long marks a test that takes seconds rather than milliseconds (a real
// process, a broker cut and healed, a soak, a whole conformance suite):
// `go test -short ./...` skips it, so the short run stays a quick check
// while the full run (the README's test command) keeps every test.
func Long(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("long test: skipped under -short (the full run has it)")
	}
}
