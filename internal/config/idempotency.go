package config

import "time"

// MaxIdempotencyTTL bounds STREAMING_HUB_IDEMPOTENCY_TTL: a week covers a
// client retrying over a long weekend, and keeps the table (one row per
// keyed POST) small.
const MaxIdempotencyTTL = 7 * 24 * time.Hour

// idempotencyTTL reads IDEMPOTENCY_TTL: a positive duration of at most
// MaxIdempotencyTTL.
func (r *reader) idempotencyTTL(v *time.Duration) {
	d := *v
	r.duration("IDEMPOTENCY_TTL", &d)
	if d > MaxIdempotencyTTL {
		r.fail("IDEMPOTENCY_TTL", "must be at most %s (7 days), got %q", "168h", d.String())
		return
	}
	*v = d
}
