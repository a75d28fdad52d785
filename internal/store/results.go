package store

import (
	"errors"
	"time"
)

// Results of attempts are written behind, in batches (docs/architecture.md,
// "Results written behind"). What follows is shared by both drivers: which
// shed results hold their subscription's place, and which write errors a
// retry cannot cure.

// ShedHold is how long an ordered subscription is held because one of its
// jobs was shed by a breaker until Until: no claim takes any of its jobs
// before then, or a later event would be first attempted before an earlier
// one (docs/delivery.md#ordering). The hold is on the subscription, not on
// its jobs, so a result written after it (another completer's failed
// attempt, due sooner) waits too. WakeJobs lifts it.
type ShedHold struct {
	SubscriptionID string
	Until          time.Time
}

// ShedHolds lists, per subscription, the latest time a breaker shed a job
// of a batch to. The drivers apply them to ordered subscriptions only
// (those at max_in_flight 1) and only ever move a hold later.
func ShedHolds(cs []Completion, now time.Time) []ShedHold {
	var out []ShedHold
	at := make(map[string]int)
	for _, c := range cs {
		if !c.Hold || c.SubscriptionID == "" || !c.NextAttemptAt.After(now) {
			continue
		}
		if i, ok := at[c.SubscriptionID]; ok {
			if c.NextAttemptAt.After(out[i].Until) {
				out[i].Until = c.NextAttemptAt
			}
			continue
		}
		at[c.SubscriptionID] = len(out)
		out = append(out, ShedHold{SubscriptionID: c.SubscriptionID, Until: c.NextAttemptAt})
	}
	return out
}

// permanent marks an error that writing the same thing again cannot cure:
// the database answered and refused the data (a constraint, a value out of
// range), as opposed to a connection lost or a database away.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks err as one a retry cannot cure (nil stays nil).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err was marked by Permanent: writing the same
// batch again would fail the same way.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}
