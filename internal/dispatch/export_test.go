package dispatch

import "time"

// SetAfter replaces the timer the dispatcher's retry waits use, so a test
// drives them without waiting on the real clock.
func SetAfter(d *Dispatcher, after func(time.Duration) <-chan time.Time) { d.after = after }

// SetIdleAfter replaces the timer of the claim loop's waits (the idle
// poll, jobs put back to wait becoming due); each call is told how long
// the loop means to wait.
func SetIdleAfter(d *Dispatcher, after func(time.Duration) <-chan time.Time) { d.idleAfter = after }

// BrokerSpan is the name and attributes of a broker publish's span.
var BrokerSpan = brokerSpan
