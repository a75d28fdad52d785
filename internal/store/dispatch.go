package store

import (
	"context"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Dispatch is the part of the store the delivery engine and the deliveries
// API work on.
type Dispatch interface {
	// ClaimJobs leases up to Batch due jobs atomically: tenants interleave
	// (each tenant's oldest job first, round by round), a tenant's jobs go
	// in arrival order, and no subscription gets more than its
	// max_in_flight jobs in flight. Concurrent claimers never claim the
	// same job.
	ClaimJobs(ctx context.Context, p ClaimParams) ([]Claimed, error)
	// CompleteJobs records results in one transaction. A completion whose
	// lease is no longer current is fenced: not written, and reported.
	CompleteJobs(ctx context.Context, p CompleteParams) (CompleteResult, error)
	// ReleaseJobs gives leased jobs back, unattempted and due at once.
	ReleaseJobs(ctx context.Context, leases []JobLease) error
	// RecoverLeases returns jobs whose lease expired without a result to
	// pending, dead-lettering as poison those recovered PoisonThreshold
	// times.
	RecoverLeases(ctx context.Context, p RecoverParams) (RecoverResult, error)
	// DeadLetterOrphans dead-letters pending jobs of disabled or deleted
	// subscriptions (those that were in flight when it happened).
	DeadLetterOrphans(ctx context.Context) (int, error)
	// AutoDisable disables every enabled subscription whose open failure
	// span is both sustained and spread now, and dead-letters its pending
	// jobs: the periodic check, for spans that reach the window while no
	// attempt is being made (a breaker shedding, or no new events).
	AutoDisable(ctx context.Context, g AutoDisable) ([]Disabled, error)
	// CountJobs counts live jobs by status (pending, in_flight,
	// dead_lettered).
	CountJobs(ctx context.Context) (map[hub.JobStatus]int64, error)

	// ListJobs pages a subscription's jobs, newest first.
	ListJobs(ctx context.Context, p ListJobsParams) ([]hub.Job, error)
	// GetJob returns one of tenantID's jobs with its attempts, oldest first.
	GetJob(ctx context.Context, tenantID, id string) (hub.Job, []hub.Attempt, error)
	// ReplayJob creates a fresh job for the same event and subscription.
	ReplayJob(ctx context.Context, tenantID, id string) (hub.Job, error)
	// ReplaySubscription creates a fresh job for each of a subscription's
	// jobs in Status completed since Since that was not replayed yet.
	ReplaySubscription(ctx context.Context, p ReplayParams) (int, error)
}

type ClaimParams struct {
	Batch int
	Lease time.Duration
	// Subscriptions, when set, limits the claim to these subscriptions:
	// a dispatcher that just finished their jobs knows they have free
	// slots, and a targeted claim costs in proportion to the list, not to
	// every subscription.
	Subscriptions []string
}

// Claimed is a job under a lease with what its attempt needs.
type Claimed struct {
	Job          hub.Job
	LeaseToken   string
	Event        hub.Event
	Subscription hub.Subscription
}

// JobLease names a job as claimed: completions are fenced on the token.
type JobLease struct {
	JobID      string
	LeaseToken string
}

// Completion is the result of one claimed job.
type Completion struct {
	JobLease
	// Status is JobSucceeded, JobPending (retry, or shed by a breaker) or
	// JobDeadLettered.
	Status           hub.JobStatus
	NextAttemptAt    time.Time // when JobPending
	DeadLetterReason string    // when JobDeadLettered
	LastError        string
	// Attempt is the request made; nil when none was (shed): then the
	// job's attempt count does not move.
	Attempt *hub.Attempt
	// Shed: the destination's breaker was open, so nothing was sent.
	Shed bool
	// SubscriptionID and AttemptAt feed the subscription's failure span.
	SubscriptionID string
}

type CompleteParams struct {
	Completions []Completion
	// AutoDisable, when set, disables subscriptions whose failure span is
	// both sustained and spread, and dead-letters their pending jobs.
	AutoDisable *AutoDisable
	// Next, when set, claims in the same transaction the next jobs of the
	// subscriptions these results freed (up to Next.Batch; only those in
	// Next.Subscriptions when it is set): the hand-off that keeps a busy
	// subscription busy without a separate claim.
	Next *ClaimParams
}

// AutoDisable are the gates of auto-disable (SPEC 9).
type AutoDisable struct {
	Window time.Duration // first failure at least this long ago
	Spread time.Duration // first and last failure at least this far apart
}

type CompleteResult struct {
	Fenced   []string   // jobs whose results were not written: their lease was lost
	Disabled []Disabled // subscriptions auto-disabled by this batch
	Claimed  []Claimed  // the next jobs, when CompleteParams.Next was set
}

// Disabled is a subscription auto-disabled, with the reason it stores.
type Disabled struct {
	SubscriptionID string
	Reason         string
}

type RecoverParams struct {
	PoisonThreshold int
	Limit           int
}

type RecoverResult struct {
	Recovered int // back to pending
	Poisoned  int // dead-lettered as poison
}

// ListJobsParams pages one subscription's jobs newest first.
type ListJobsParams struct {
	TenantID       string
	SubscriptionID string
	Status         hub.JobStatus // "" means all
	Before         string        // only ids lower than this
	Limit          int
}

type ReplayParams struct {
	TenantID       string
	SubscriptionID string
	Status         hub.JobStatus
	Since          time.Time
}
