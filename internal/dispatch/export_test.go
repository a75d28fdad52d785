package dispatch

import "time"

// SetAfter replaces the timer the dispatcher's retry waits use, so a test
// drives them without waiting on the real clock.
func SetAfter(d *Dispatcher, after func(time.Duration) <-chan time.Time) { d.after = after }

// BrokerSpan is the name and attributes of a broker publish's span.
var BrokerSpan = brokerSpan
