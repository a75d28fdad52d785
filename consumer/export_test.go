package consumer

// NewFakeClock lets the external tests (package consumer_test) use the
// package's fake clock.
var NewFakeClock = newFakeClock
