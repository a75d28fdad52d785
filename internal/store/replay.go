package store

import (
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Replay is the fresh pending job a replay of j creates: the same event
// and subscription, due now, its latency counted from now.
func Replay(j hub.Job, now time.Time) hub.Job {
	return hub.Job{
		ID: hub.NewID("dlv", now), TenantID: j.TenantID, SubscriptionID: j.SubscriptionID,
		EventSequence: j.EventSequence, EventID: j.EventID, Status: hub.JobPending,
		NextAttemptAt: now, EnqueuedAt: now, CreatedAt: now, UpdatedAt: now,
	}
}

// MaxReplay bounds one bulk replay; calling again replays the rest, since
// what was replayed is marked.
const MaxReplay = 10_000

// EventGone is the answer to replaying a job whose event retention deleted.
func EventGone(eventID string) error {
	return hub.Errorf(hub.ECONFLICT, "event %q is no longer retained in the inbox", eventID)
}

// Replayable says whether a subscription can take replayed jobs, given what
// a driver read of it: a deleted (or missing) or disabled one cannot.
func Replayable(subscriptionID string, found, enabled, deleted bool) error {
	switch {
	case !found || deleted:
		return hub.Errorf(hub.ECONFLICT, "subscription %q was deleted: nothing to replay to", subscriptionID)
	case !enabled:
		return hub.Errorf(hub.ECONFLICT, "subscription %q is disabled: enable or verify it before replaying", subscriptionID)
	}
	return nil
}
