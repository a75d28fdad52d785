// Package store defines the hub's persistence: one interface, implemented by
// the postgres and sqlite drivers and held to one behaviour by the storetest
// conformance suite. Every method is one transaction.
package store

import (
	"context"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
)

// Store is what the hub needs from a database. Errors a caller may act on are
// *hub.Error (ENOTFOUND, ECONFLICT, EINVALID); anything else is internal.
type Store interface {
	// Migrate applies pending schema migrations. CheckSchema reports whether
	// the database is at exactly the version this binary expects.
	Migrate(ctx context.Context) error
	CheckSchema(ctx context.Context) error
	Ping(ctx context.Context) error
	Close() error

	CreateTenant(ctx context.Context, p CreateTenantParams) (hub.Tenant, error)
	GetTenant(ctx context.Context, id string) (hub.Tenant, error)
	ListTenants(ctx context.Context, p ListTenantsParams) ([]hub.Tenant, error)
	UpdateTenant(ctx context.Context, p UpdateTenantParams) (hub.Tenant, error)

	// Ingest persists one partition's batch in one transaction: the roster
	// gate, dedup on (tenant, ce-id), arrival sequences, inbox rows,
	// matching and its delivery jobs, and rejections. Nothing is written
	// unless everything is: an event is never stored without its jobs.
	Ingest(ctx context.Context, p IngestParams) (IngestResult, error)
	// Write is one batch of the process's writer (docs/architecture.md,
	// "The writer") in one transaction: records of any partitions (as
	// Ingest, leasing at birth what the offer has room for), delivery
	// results (as CompleteJobs, with the hand-off claim) and gathered
	// statistics. Its subscription rows are locked once, in id order, for
	// all its parts. It is durable on return when it carries records;
	// results alone commit asynchronously. Ingest and CompleteJobs are
	// Write with one part.
	Write(ctx context.Context, p WriteParams) (WriteResult, error)
	ListRejections(ctx context.Context, p ListRejectionsParams) ([]hub.Rejection, error)
	// GetRejection is one rejected record by id (ENOTFOUND when the log no
	// longer holds it): what a replay reads again at its source.
	GetRejection(ctx context.Context, id int64) (hub.Rejection, error)
	ListEvents(ctx context.Context, p ListEventsParams) ([]hub.Event, error)

	ControlPlane
	Dispatch
	Retention
	Secrets
	Insight
	Console
	Idempotency
	DLQ
	Backfills
	Drifts
	Certificates
}

// Options are common to every driver.
type Options struct {
	// Now is the clock; nil means time.Now. Each transaction reads it once,
	// so every timestamp a transaction writes agrees.
	Now func() time.Time
	// DatabaseClock compares heartbeats and lease ends with the
	// database's own clock (PostgreSQL's now()) rather than Now, so that
	// processes whose clocks disagree never take each other's jobs early
	// (docs/delivery.md, "Crashes"). Production sets it; tests that drive
	// a fake clock leave it off. SQLite, one process's, always uses Now.
	DatabaseClock bool
	// MaxRejections bounds rejected_records to the newest N; 0 means
	// config.DefaultMaxRejections.
	MaxRejections int
	// Pool sizes the connection pool and divides it between budgets.
	Pool PoolOptions
	// OnStatement, when set, is told of every statement the PostgreSQL
	// driver runs and its time on the client: the bench counts statements
	// per event with it. SQLite ignores it.
	OnStatement func(sql string, took time.Duration)
}

// WithDefaults fills zero fields.
func (o Options) WithDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxRejections <= 0 {
		o.MaxRejections = config.DefaultMaxRejections
	}
	return o
}

type CreateTenantParams struct {
	ID     string
	Name   string
	Status hub.TenantStatus // "" means active
}

type UpdateTenantParams struct {
	ID     string
	Name   *string
	Status *hub.TenantStatus
}

// ListTenantsParams pages tenants by id.
type ListTenantsParams struct {
	After string // list ids greater than this
	Limit int
}

type IngestParams struct {
	// Events are the records that passed the wire contract, in partition
	// order. Their tenant and ce-id decide admission.
	Events []hub.Event
	// Rejected are the records that broke it; they are stored for operators.
	Rejected []hub.Rejection
}

// IngestResult has one outcome per IngestParams.Events entry, in order,
// the number of delivery jobs matching created, and the tenants of the
// accepted events (AcceptedTenants: once each, in first order), whom
// ingest tells that they have new events.
type IngestResult struct {
	Outcomes []Outcome
	Jobs     int
	Tenants  []string
	// Subscriptions are those of the jobs created, once each.
	Subscriptions []string
}

// Outcome is the verdict for one event that passed the wire contract:
// Accept (with its sequence) or Discard (with the reason).
type Outcome struct {
	Verdict  hub.Verdict
	Reason   string
	Sequence int64
}

// ListRejectionsParams pages rejections newest first.
type ListRejectionsParams struct {
	Before int64 // only ids lower than this; 0 means from the newest
	Limit  int
}

// ListEventsParams pages one tenant's events in arrival order.
type ListEventsParams struct {
	TenantID string
	After    int64    // only sequences greater than this
	Types    []string // event types (<resource>.<event>); empty means all
	Limit    int
	// Newest lists newest first (the console's view): After is ignored,
	// and Before > 0 keeps only sequences below it.
	Newest bool
	Before int64
}

// ControlPlane is the part of the store the API's tenants, keys and
// subscriptions live in.
type ControlPlane interface {
	// CreateAPIKey stores a key (ENOTFOUND when the tenant does not exist).
	CreateAPIKey(ctx context.Context, k hub.APIKey) error
	GetAPIKey(ctx context.Context, id string) (hub.APIKey, error)
	// DeleteAPIKey deletes one of tenantID's keys (ENOTFOUND otherwise).
	DeleteAPIKey(ctx context.Context, tenantID, id string) error

	// CreateSubscription stores s as given (the caller chose its id and
	// sealed its secrets); it stamps Version 1 and the times.
	CreateSubscription(ctx context.Context, s hub.Subscription) (hub.Subscription, error)
	// GetSubscription answers ENOTFOUND for another tenant's or a deleted
	// subscription: the two are indistinguishable to the caller.
	GetSubscription(ctx context.Context, tenantID, id string) (hub.Subscription, error)
	ListSubscriptions(ctx context.Context, p ListSubscriptionsParams) ([]hub.Subscription, error)
	// ListDisabledSubscriptions pages, across tenants, the subscriptions
	// the hub disabled (not enabled, disabled_reason set; not deleted),
	// most recently disabled first (then by id), at most p.Limit
	// (1..1000): GET /v1/admin/disabled-subscriptions, which the operator
	// overview reads.
	ListDisabledSubscriptions(ctx context.Context, p ListDisabledSubscriptionsParams) ([]hub.Subscription, error)
	// UpdateSubscription writes every mutable field of s if the stored
	// Version still equals s.Version (else ECONFLICT), and bumps it.
	UpdateSubscription(ctx context.Context, s hub.Subscription) (hub.Subscription, error)
	// DeleteSubscription marks it deleted; it stops matching at once.
	DeleteSubscription(ctx context.Context, tenantID, id string) error
}

// ListDisabledSubscriptionsParams pages the disabled subscriptions: After,
// when set, is the last one of the previous page, and the page starts
// after it in that order.
type ListDisabledSubscriptionsParams struct {
	After *DisabledPosition
	Limit int
}

// DisabledPosition is a disabled subscription's place in that order: when
// it was disabled (nil sorts last) and its id.
type DisabledPosition struct {
	At *time.Time
	ID string
}

// ListSubscriptionsParams pages one tenant's subscriptions by id.
type ListSubscriptionsParams struct {
	TenantID string
	After    string
	Limit    int
}
