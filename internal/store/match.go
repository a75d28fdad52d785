package store

import (
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Match returns the delivery jobs of a batch's accepted events: one per
// deliverable subscription of the event's tenant that wants its (event
// type, schema major) and whose filters the event satisfies. subs are the batch tenants' subscriptions as read in
// the ingest transaction; an event nobody wants yields no job.
func Match(events []hub.Event, outcomes []Outcome, subs []hub.Subscription, now time.Time) []hub.Job {
	byTenant := make(map[string][]*hub.Subscription)
	for i := range subs {
		if subs[i].Deliverable() {
			byTenant[subs[i].TenantID] = append(byTenant[subs[i].TenantID], &subs[i])
		}
	}
	var jobs []hub.Job
	for i := range events {
		ev := &events[i]
		if outcomes[i].Verdict != hub.Accept {
			continue
		}
		for _, s := range byTenant[ev.TenantID] {
			if !s.Wants(ev) {
				continue
			}
			jobs = append(jobs, hub.Job{
				ID:             hub.NewID("dlv", now),
				TenantID:       ev.TenantID,
				SubscriptionID: s.ID,
				EventSequence:  outcomes[i].Sequence,
				EventID:        ev.ID,
				Status:         hub.JobPending,
				NextAttemptAt:  now,
				EnqueuedAt:     now,
				CreatedAt:      now,
				UpdatedAt:      now,
			})
		}
	}
	return jobs
}

// AcceptedTenants lists, once each and in the order they first appear, the
// tenants of the events outcomes accepted: whose subscriptions matching
// reads, and whom ingest tells that they have new events.
func AcceptedTenants(events []hub.Event, outcomes []Outcome) []string {
	var tenants []string
	seen := make(map[string]bool)
	for i, o := range outcomes {
		if o.Verdict != hub.Accept || i >= len(events) {
			continue
		}
		if t := events[i].TenantID; !seen[t] {
			seen[t] = true
			tenants = append(tenants, t)
		}
	}
	return tenants
}
