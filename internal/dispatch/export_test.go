package dispatch

import "time"

// LastTry bounds a stopped Run's wait for its last results.
const LastTry = lastTry

// SetIdleAfter replaces the timer of the claim loop's waits (the idle
// poll, jobs put back to wait becoming due); each call is told how long
// the loop means to wait.
func SetIdleAfter(d *Dispatcher, after func(time.Duration) <-chan time.Time) {
	d.claims.idleAfter = after
}

// BrokerSpan is the name and attributes of a broker publish's span.
var BrokerSpan = brokerSpan
