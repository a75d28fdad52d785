package store

import (
	"context"
	"sort"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Insight is what the tenant's and the operator's questions after "is it
// delivered?" read
// (docs/insight.md):
// health, the catalog, lookups and keys.
type Insight interface {
	Health

	// ListTypesSeen lists the event types a tenant received, by type and
	// major.
	ListTypesSeen(ctx context.Context, tenantID string) ([]TypeSeen, error)
	// RecordManifestFetch records one fetch of a manifest source at at: a
	// good one (manifest set) becomes the source's stored copy and clears
	// its error; a failed one (manifest nil) only sets its last error,
	// keeping the last good copy.
	RecordManifestFetch(ctx context.Context, url string, at time.Time, manifest []byte, fetchErr string) error
	// ListManifests lists the sources ever fetched, by URL.
	ListManifests(ctx context.Context) ([]ManifestSource, error)

	// GetEvent returns one of a tenant's events by ce-id, with its
	// delivery jobs, newest first.
	GetEvent(ctx context.Context, tenantID, ceID string) (hub.Event, []hub.Job, error)
	// SearchJobs pages a tenant's jobs, newest first.
	SearchJobs(ctx context.Context, p SearchJobsParams) ([]hub.Job, error)
	// TenantsOf answers, by id order, the tenants that hold a resource
	// named by its id, for an operator's deep link (docs/console.md): a delivery
	// job (ResourceDelivery) or a subscription not deleted
	// (ResourceSubscription) is one tenant's; an event's ce-id
	// (ResourceEvent) may be several tenants' (at most 100 are answered).
	// Nothing holds it: an empty list.
	TenantsOf(ctx context.Context, kind ResourceKind, id string) ([]string, error)

	// ListAPIKeys lists a tenant's keys by id (without their hashes).
	ListAPIKeys(ctx context.Context, tenantID string) ([]hub.APIKey, error)
	// TouchAPIKey sets a key's last use to at, unless it was set less than
	// KeyTouchInterval before: however many replicas and requests, a key
	// is written at most once a minute.
	TouchAPIKey(ctx context.Context, id string, at time.Time) error
}

// ResourceKind names what TenantsOf looks up.
type ResourceKind string

const (
	ResourceDelivery     ResourceKind = "delivery"
	ResourceSubscription ResourceKind = "subscription"
	ResourceEvent        ResourceKind = "event"
)

// KeyTouchInterval is how stale a key's last_used_at may get.
const KeyTouchInterval = time.Minute

// TypeSeen is one (tenant, event type, schema major) ingest stored.
type TypeSeen struct {
	TenantID    string
	EventType   string
	SchemaMajor int
	Source      string // the latest event's ce-source
	FirstSeenAt time.Time
	LastSeenAt  time.Time
}

// TypesSeen folds a batch's accepted events into one entry per tenant,
// type and major (the last event's source), sorted, for one upsert each.
func TypesSeen(events []hub.Event, outcomes []Outcome, now time.Time) []TypeSeen {
	type key struct {
		tenant, typ string
		major       int
	}
	m := make(map[key]string)
	for i, ev := range events {
		if i < len(outcomes) && outcomes[i].Verdict == hub.Accept {
			m[key{ev.TenantID, ev.EventType, ev.SchemaMajor}] = ev.Source
		}
	}
	out := make([]TypeSeen, 0, len(m))
	for k, src := range m {
		out = append(out, TypeSeen{TenantID: k.tenant, EventType: k.typ, SchemaMajor: k.major, Source: src, FirstSeenAt: now, LastSeenAt: now})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.TenantID != b.TenantID {
			return a.TenantID < b.TenantID
		}
		if a.EventType != b.EventType {
			return a.EventType < b.EventType
		}
		return a.SchemaMajor < b.SchemaMajor
	})
	return out
}

// ManifestSource is one producer manifest URL as last fetched.
type ManifestSource struct {
	URL           string
	Manifest      []byte // the last good copy; nil before the first
	LastFetchedAt *time.Time
	LastSuccessAt *time.Time
	LastError     string
}

// SearchJobsParams filter and page a tenant's jobs newest first; zero
// fields do not filter.
type SearchJobsParams struct {
	TenantID       string
	Status         hub.JobStatus
	SubscriptionID string
	EventID        string
	Since, Until   time.Time // created at or after Since, before Until
	Before         string    // only ids lower than this
	Limit          int
}

// IDRange is the id range a search pages through: ids below Before (all
// when the caller gives none) and, with Since, at or above the lowest id
// created then; and the page size.
func (p SearchJobsParams) IDRange() (before, low string, limit int) {
	before, limit = p.Before, ClampLimit(p.Limit, 50, 1000)
	if before == "" {
		before = "\U0010FFFF"
	}
	if !p.Since.IsZero() {
		low = JobIDBound(p.Since)
	}
	return before, low, limit
}

// JobIDBound is the lowest job id created at t or later: job ids start
// with their creation's millisecond (hub.NewID), so "since" is an id bound
// the (subscription, id) index serves. Only a lower bound: an id may run
// ahead of its creation time (hub.NewID increments past the last id when
// the clock steps back), never behind it.
func JobIDBound(t time.Time) string {
	return hub.IDPrefixAt("dlv", t)
}
