package store

import (
	"context"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Backfills is the part of the store backfills live in
// (docs/backfill.md).
//
// A backfill queues, in arrival order and a bounded chunk per
// transaction, a job for every retained event of the subscription's
// tenant received at or after Since that the subscription matches and
// that has no job for it yet. It starts when the subscription is first
// found deliverable: the window then ends at the tenant's last arrival
// sequence (later events get their jobs from matching). Until it is done,
// claims hold back the subscription's jobs of events past the backfill's
// cursor, so no newer event overtakes an older one of the window.
type Backfills interface {
	// StartBackfill (re)starts the backfill of one of tenantID's
	// subscriptions from since: running, nothing walked, counts zero. The
	// subscription's jobs are held from now on until it is done.
	// ENOTFOUND when the subscription is not the tenant's.
	StartBackfill(ctx context.Context, tenantID, subscriptionID string, since time.Time) (hub.Backfill, error)
	// Backfills returns the backfills of those of subscriptionIDs (of
	// tenantID) that have one, by subscription id.
	Backfills(ctx context.Context, tenantID string, subscriptionIDs []string) (map[string]hub.Backfill, error)
	// AdvanceBackfills advances up to Limit running backfills of
	// deliverable subscriptions, the least recently advanced first, by one
	// chunk of at most Chunk events each, each in its own transaction. A
	// backfill another process is advancing (or whose subscription is
	// locked) is skipped, never waited for.
	AdvanceBackfills(ctx context.Context, p AdvanceBackfillsParams) (AdvanceBackfillsResult, error)
}

type AdvanceBackfillsParams struct {
	Chunk int // events walked per backfill and transaction (<= 0: DefaultBackfillChunk)
	Limit int // backfills advanced (<= 0: DefaultBackfillLimit)
}

// Defaults of AdvanceBackfillsParams.
const (
	DefaultBackfillChunk = 500
	DefaultBackfillLimit = 16
)

func (p AdvanceBackfillsParams) WithDefaults() AdvanceBackfillsParams {
	if p.Chunk <= 0 {
		p.Chunk = DefaultBackfillChunk
	}
	if p.Limit <= 0 {
		p.Limit = DefaultBackfillLimit
	}
	return p
}

type AdvanceBackfillsResult struct {
	// Advanced are the backfills this call moved, as they are now.
	Advanced []hub.Backfill
	// Queued counts the jobs it created; Finished, the backfills it
	// finished (their held jobs are claimable now).
	Queued, Finished int
}

// More reports whether a backfill it advanced is still running: call again.
func (r AdvanceBackfillsResult) More() bool {
	for _, b := range r.Advanced {
		if b.State == hub.BackfillRunning {
			return true
		}
	}
	return false
}

// BackfillChunk walks one chunk of a backfill: events are the window's next
// events in arrival order (at most chunk of them, each received at or
// after b.Since, none past b.UntilSequence), had the sequences that
// already have a job for the subscription. It moves b's cursor and counts,
// finishes it when the window is walked, and returns the jobs to create.
func BackfillChunk(b *hub.Backfill, sub *hub.Subscription, events []hub.Event, had map[int64]bool, chunk int, now time.Time) []hub.Job {
	var jobs []hub.Job
	for i := range events {
		ev := &events[i]
		b.Sequence = max(b.Sequence, ev.Sequence)
		if !sub.Wants(ev) {
			continue
		}
		b.Matched++
		if had[ev.Sequence] {
			b.Skipped++
			continue
		}
		b.Queued++
		jobs = append(jobs, hub.Job{
			ID:             hub.NewID("dlv", now),
			TenantID:       ev.TenantID,
			SubscriptionID: sub.ID,
			EventSequence:  ev.Sequence,
			EventID:        ev.ID,
			Status:         hub.JobPending,
			NextAttemptAt:  now,
			EnqueuedAt:     now,
			CreatedAt:      now,
			UpdatedAt:      now,
		})
	}
	if len(events) < chunk || b.Sequence >= b.UntilSequence {
		b.Sequence = b.UntilSequence
		b.State = hub.BackfillDone
		b.FinishedAt = &now
	}
	return jobs
}

// BackfillHold is the subscription's backfill_hold after a step: the
// cursor while it runs, none (nil) once it is done.
func BackfillHold(b hub.Backfill) *int64 {
	if b.State == hub.BackfillDone {
		return nil
	}
	seq := b.Sequence
	return &seq
}
