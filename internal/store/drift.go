package store

import (
	"context"
	"sort"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Drifts is where the topic-drift check keeps what it found, so that each
// change is reported once, whichever replica runs the check
// (docs/operations.md, "Topic drift").
type Drifts interface {
	// RecordTopicDrift replaces the stored differences with current, in
	// one transaction, and returns those that appeared and those that
	// resolved since the last call. When any did, the same transaction
	// writes one operational event hub.topics.drift into the inbox of
	// every active tenant (TopicDriftEvents).
	RecordTopicDrift(ctx context.Context, current []hub.TopicDrift) (DriftChanges, error)
	// ListTopicDrift lists the stored differences, by topic and kind.
	ListTopicDrift(ctx context.Context) ([]hub.TopicDrift, error)
}

// DriftChanges are what one check changed.
type DriftChanges struct {
	Detected, Resolved []hub.TopicDrift
}

// Empty reports whether nothing changed.
func (c DriftChanges) Empty() bool { return len(c.Detected) == 0 && len(c.Resolved) == 0 }

// DiffDrift compares the stored differences with the current ones: what
// appeared and what resolved, each sorted by topic and kind. Duplicates in
// current count once.
func DiffDrift(stored, current []hub.TopicDrift) DriftChanges {
	was := make(map[hub.TopicDrift]bool, len(stored))
	for _, d := range stored {
		was[d] = true
	}
	is := make(map[hub.TopicDrift]bool, len(current))
	var c DriftChanges
	for _, d := range current {
		if is[d] {
			continue
		}
		is[d] = true
		if !was[d] {
			c.Detected = append(c.Detected, d)
		}
	}
	for _, d := range stored {
		if !is[d] {
			c.Resolved = append(c.Resolved, d)
		}
	}
	SortDrift(c.Detected)
	SortDrift(c.Resolved)
	return c
}

// SortDrift sorts differences by topic, then kind.
func SortDrift(ds []hub.TopicDrift) {
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].Topic != ds[j].Topic {
			return ds[i].Topic < ds[j].Topic
		}
		return ds[i].Kind < ds[j].Kind
	})
}

// TopicDriftEvents are the hub.topics.drift events of one check's changes,
// one per tenant: {"detected":[{"topic","kind"}],"resolved":[...]}.
// Topics are shared by every tenant, so each active tenant is told.
func TopicDriftEvents(tenants []string, c DriftChanges, now time.Time) []hub.Event {
	if c.Empty() {
		return nil
	}
	detected, resolved := c.Detected, c.Resolved
	if detected == nil {
		detected = []hub.TopicDrift{}
	}
	if resolved == nil {
		resolved = []hub.TopicDrift{}
	}
	out := make([]hub.Event, 0, len(tenants))
	for _, t := range tenants {
		out = append(out, operationalEvent(t, hub.EventTopicsDrift, "topics", map[string]any{
			"detected": detected, "resolved": resolved,
		}, now))
	}
	return out
}
