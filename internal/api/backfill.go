package api

import (
	"context"
	"encoding/json"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
)

// backfillRequest is a subscription's "backfill": {"since": "<RFC 3339>"}
// on create or PATCH (docs/backfill.md).
type backfillRequest struct {
	Since *string `json:"since"`
}

// backfillJSON is a subscription's backfill as the API shows it.
type backfillJSON struct {
	// Since is the effective start: the time asked for, or the retention
	// horizon when it asked for more.
	Since time.Time `json:"since"`
	// State is running (walking the window, or waiting for the
	// subscription to be verified to start) or done.
	State      string     `json:"state"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	// Matched: retained events of the window the subscription matches,
	// found so far. Queued: those given a job by the backfill. Skipped:
	// those that already had a job for the subscription (never queued
	// twice). matched = queued + skipped.
	Matched int64 `json:"matched"`
	Queued  int64 `json:"queued"`
	Skipped int64 `json:"skipped"`
	// Sequence is the last arrival sequence walked, UntilSequence the last
	// one of the window (fixed when it started; 0 before): progress.
	Sequence      int64 `json:"sequence"`
	UntilSequence int64 `json:"until_sequence"`
}

func toBackfillJSON(b hub.Backfill) *backfillJSON {
	return &backfillJSON{Since: b.Since, State: string(b.State), StartedAt: b.StartedAt, FinishedAt: b.FinishedAt,
		Matched: b.Matched, Queued: b.Queued, Skipped: b.Skipped, Sequence: b.Sequence, UntilSequence: b.UntilSequence}
}

// retention is how far back a backfill may reach: the inbox retention.
func (s *Server) retention() time.Duration {
	if s.deps.InboxRetention > 0 {
		return s.deps.InboxRetention
	}
	return config.Defaults(config.Serve).Housekeeping.InboxRetention
}

// backfillSince reads and checks a request's backfill: nil when it has
// none; a since in the future is a 400 naming backfill.since; one older
// than the retention horizon is clamped to it.
func (s *Server) backfillSince(raw json.RawMessage) (*time.Time, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if isNull(raw) {
		return nil, hub.Errorf(hub.EINVALID, `backfill: must be an object {"since": "<RFC 3339>"}`)
	}
	var req backfillRequest
	if err := strict(raw, &req, "backfill"); err != nil {
		return nil, err
	}
	if req.Since == nil {
		return nil, hub.Errorf(hub.EINVALID, "backfill.since: required (RFC 3339)")
	}
	since, err := time.Parse(time.RFC3339Nano, *req.Since)
	if err != nil {
		return nil, hub.Errorf(hub.EINVALID, "backfill.since: %q is not an RFC 3339 time", *req.Since)
	}
	since, err = hub.ValidateBackfillSince(since, s.now(), s.retention())
	if err != nil {
		return nil, err
	}
	return &since, nil
}

// withBackfills fills the backfill of each subscription that has one.
func (s *Server) withBackfills(ctx context.Context, tenantID string, subs []subscriptionJSON) error {
	if len(subs) == 0 {
		return nil
	}
	ids := make([]string, len(subs))
	for i, sub := range subs {
		ids[i] = sub.ID
	}
	bs, err := s.deps.Store.Backfills(ctx, tenantID, ids)
	if err != nil {
		return err
	}
	for i := range subs {
		if b, ok := bs[subs[i].ID]; ok {
			subs[i].Backfill = toBackfillJSON(b)
		}
	}
	return nil
}
