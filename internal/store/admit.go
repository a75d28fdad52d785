package store

import (
	"slices"

	hub "github.com/lerianstudio/streaming-hub"
)

// RosterEntry is what admission needs to know of a tenant: whether it may
// send, and the last arrival sequence it was given.
type RosterEntry struct {
	Status       hub.TenantStatus
	LastSequence int64
}

// EventKey identifies an event for dedup: (tenant, ce-id).
type EventKey struct{ TenantID, ID string }

// Admit decides each event's outcome, the part of Ingest every driver shares.
// roster holds the batch's tenants as read, locked, in the transaction;
// stored holds the keys already in the inbox. Admit assigns sequences in
// event order, advancing roster[...].LastSequence, and treats a ce-id
// repeated within the batch as a duplicate of its first occurrence.
func Admit(events []hub.Event, roster map[string]*RosterEntry, stored map[EventKey]bool) []Outcome {
	out := make([]Outcome, len(events))
	seen := make(map[EventKey]bool, len(events))
	for i, ev := range events {
		t, ok := roster[ev.TenantID]
		key := EventKey{ev.TenantID, ev.ID}
		switch {
		case !ok:
			out[i] = Outcome{Verdict: hub.Discard, Reason: hub.ReasonUnknownTenant}
		case t.Status != hub.TenantActive:
			out[i] = Outcome{Verdict: hub.Discard, Reason: hub.ReasonInactiveTenant}
		case stored[key] || seen[key]:
			out[i] = Outcome{Verdict: hub.Discard, Reason: hub.ReasonDuplicate}
		default:
			seen[key] = true
			t.LastSequence++
			out[i] = Outcome{Verdict: hub.Accept, Sequence: t.LastSequence}
		}
	}
	return out
}

// Tenants returns the distinct tenant ids of events, sorted, so that every
// transaction locks tenants in the same order and none deadlocks.
func Tenants(events []hub.Event) []string {
	ids := distinct(events, func(ev hub.Event) string { return ev.TenantID })
	slices.Sort(ids)
	return ids
}
