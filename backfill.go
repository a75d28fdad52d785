package hub

import "time"

// BackfillState is where a subscription's backfill is
// (docs/backfill.md).
type BackfillState string

const (
	// BackfillRunning: the backfill is queuing the retained events it
	// matches (or waits for the subscription to be active to start). While
	// it runs, the subscription's jobs of newer events wait.
	BackfillRunning BackfillState = "running"
	// BackfillDone: every retained event of the window it matches has a
	// job; the subscription's newer jobs flow again.
	BackfillDone BackfillState = "done"
)

// Backfill is a subscription's request to receive, before new events, the
// retained events of its tenant it matches from Since on
// (docs/backfill.md), and its progress.
type Backfill struct {
	SubscriptionID string
	TenantID       string
	// Since is the effective start: the time asked for, clamped to the
	// retention horizon when it asked for more.
	Since time.Time
	State BackfillState
	// StartedAt is when the subscription was first found active and the
	// window's end fixed; nil while it waits for the verification.
	StartedAt  *time.Time
	FinishedAt *time.Time
	// UntilSequence is the tenant's last arrival sequence when it started:
	// events after it got their jobs from matching. Sequence is the last
	// arrival sequence looked at; the backfill is done when it reaches
	// UntilSequence.
	UntilSequence int64
	Sequence      int64
	// Matched counts the events of the window it matched so far; Queued,
	// those it created a job for; Skipped, those that already had a job
	// for the subscription (never queued twice). Matched = Queued + Skipped.
	Matched, Queued, Skipped int64
	CreatedAt                time.Time
}

// ValidateBackfillSince checks a backfill's since against now and the
// retention horizon: a since in the future is invalid; one older than
// now - retention is clamped to it. It returns the effective since.
func ValidateBackfillSince(since, now time.Time, retention time.Duration) (time.Time, error) {
	if since.IsZero() {
		return time.Time{}, Errorf(EINVALID, "backfill.since: required (RFC 3339)")
	}
	if since.After(now) {
		return time.Time{}, Errorf(EINVALID, "backfill.since: %s is in the future", since.Format(time.RFC3339))
	}
	if horizon := now.Add(-retention); retention > 0 && since.Before(horizon) {
		since = horizon
	}
	return since.UTC(), nil
}
