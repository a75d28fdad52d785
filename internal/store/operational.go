package store

import (
	"encoding/json"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Report names what one transaction changed that operational events tell
// the tenant about
// (docs/insight.md).
// A driver fills it where it writes the change and, before committing, turns
// it into events (OperationalEvents) that go into the inbox like any ingested
// event: admitted, sequenced and matched.
type Report struct {
	Disabled     []string // subscriptions this transaction disabled
	Recovered    []string // subscriptions this transaction enabled again
	DeadLettered []string // jobs this transaction dead-lettered
}

// Empty reports whether there is nothing to tell.
func (r Report) Empty() bool {
	return len(r.Disabled) == 0 && len(r.Recovered) == 0 && len(r.DeadLettered) == 0
}

// SubscriptionState is what a driver reads of a subscription a Report names.
type SubscriptionState struct {
	ID, TenantID, Name, DisabledReason string
	DisabledAt                         *time.Time
}

// DeadLetterState is what a driver reads of a job a Report names, with the
// ce-type and event type of its event ("" when retention took the event).
type DeadLetterState struct {
	JobID, TenantID, SubscriptionID, EventID string
	EventType, CEType                        string
	Reason, LastError                        string
	Attempts                                 int
}

// OperationalEvents are the events a Report's changes emit, disabled and
// recovered subscriptions first, then dead letters in the order given. A
// dead letter of an operational event emits nothing: they never cascade.
func OperationalEvents(disabled, recovered []SubscriptionState, dead []DeadLetterState, now time.Time) []hub.Event {
	var out []hub.Event
	for _, s := range disabled {
		at := now
		if s.DisabledAt != nil {
			at = *s.DisabledAt
		}
		out = append(out, operationalEvent(s.TenantID, hub.EventSubscriptionDisabled, s.ID, map[string]any{
			"subscription_id": s.ID, "name": s.Name, "reason": s.DisabledReason, "disabled_at": at.UTC(),
		}, now))
	}
	for _, s := range recovered {
		out = append(out, operationalEvent(s.TenantID, hub.EventSubscriptionRecovered, s.ID, map[string]any{
			"subscription_id": s.ID, "name": s.Name,
		}, now))
	}
	for _, d := range dead {
		if hub.IsOperational(d.CEType) {
			continue
		}
		out = append(out, operationalEvent(d.TenantID, hub.EventDeliveryDeadLettered, d.SubscriptionID, map[string]any{
			"subscription_id": d.SubscriptionID, "delivery_id": d.JobID, "event_id": d.EventID,
			"event_type": d.EventType, "reason": d.Reason, "attempts": d.Attempts, "last_error": d.LastError,
		}, now))
	}
	return out
}

func operationalEvent(tenantID, eventType, subject string, data map[string]any, now time.Time) hub.Event {
	body, _ := json.Marshal(data) // maps of strings, ints and times always encode
	return hub.Event{
		TenantID:        tenantID,
		ID:              hub.NewID("hub", now),
		SpecVersion:     "1.0",
		Type:            hub.OperationalCEType(eventType),
		EventType:       eventType,
		Source:          hub.OperationalSource,
		Subject:         subject,
		Time:            now.UTC().Format(time.RFC3339Nano),
		SchemaVersion:   hub.OperationalSchemaVersion,
		SchemaMajor:     1,
		DataContentType: hub.DefaultContentType,
		Data:            body,
	}
}

// DeadLettering lists the jobs of cs that a completion transaction
// dead-lettered: those whose update was written (not fenced).
func DeadLettering(cs []Completion, fenced []string) []string {
	skip := make(map[string]bool, len(fenced))
	for _, id := range fenced {
		skip[id] = true
	}
	var out []string
	for _, c := range cs {
		if c.Status == hub.JobDeadLettered && !skip[c.JobID] {
			out = append(out, c.JobID)
		}
	}
	return out
}

// Transitions compares a subscription before and after an update: whether
// the update disabled it or enabled it again.
func Transitions(wasEnabled bool, after hub.Subscription) (disabled, recovered bool) {
	return wasEnabled && !after.Enabled, !wasEnabled && after.Enabled
}
