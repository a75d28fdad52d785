package store

import "time"

// Now reads the clock once for a transaction, in UTC and truncated to the
// microsecond both databases keep, so what a method returns equals what a
// later read finds.
func (o Options) Stamp() time.Time { return o.Now().UTC().Truncate(time.Microsecond) }

// LeaseNow is the "now" heartbeats and lease ends are compared with: nil
// for the database's own clock (DatabaseClock: SQL reads
// coalesce($n, now())), else Stamp.
func (o Options) LeaseNow() *time.Time {
	if o.DatabaseClock {
		return nil
	}
	t := o.Stamp()
	return &t
}
