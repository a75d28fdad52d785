package store

import "time"

// Now reads the clock once for a transaction, in UTC and truncated to the
// microsecond both databases keep, so what a method returns equals what a
// later read finds.
func (o Options) Stamp() time.Time { return o.Now().UTC().Truncate(time.Microsecond) }
