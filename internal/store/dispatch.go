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
	// lease is no longer current is fenced: not written, and reported. An
	// attempt already logged (a batch written again after a commit whose
	// answer was lost) is not logged twice. A job shed by a breaker keeps
	// its place in an ordered subscription (max_in_flight 1): the
	// subscription is held until the shed job comes due (ShedHolds), and
	// claims take none of its jobs before then.
	CompleteJobs(ctx context.Context, p CompleteParams) (CompleteResult, error)
	// ResultsRecorded answers, for a batch of results whose write failed
	// with an error that leaves its outcome unknown (the connection was
	// lost around the COMMIT), the jobs whose result is already recorded:
	// the job no longer holds the completion's lease and the attempt, if
	// one was made, is in the attempt log. Only the write that carried the
	// attempt logs it, in the transaction that also released the lease,
	// so such a result was written; the rest of the batch is not.
	ResultsRecorded(ctx context.Context, cs []Completion) ([]string, error)
	// ReleaseJobs gives leased jobs back, unattempted and due at once.
	ReleaseJobs(ctx context.Context, leases []JobLease) error
	// RenewLeases extends the leases of jobs still worked on to now +
	// Lease, each fenced on its token, and returns the ids of those it
	// could not renew (no longer theirs: recovered, or completed).
	RenewLeases(ctx context.Context, p RenewParams) (lost []string, err error)
	// RecoverLeases returns jobs whose lease expired without a result to
	// pending, dead-lettering as poison those recovered PoisonThreshold
	// times. A recovery that may have interrupted an attempt counts: the
	// job's recoveries and attempts grow by one and its attempt log gets
	// an attempt with the error RecoveredAttemptError. The jobs of a run
	// behind the first one still in flight were never attempted: they go
	// back to pending without counting.
	RecoverLeases(ctx context.Context, p RecoverParams) (RecoverResult, error)
	// Heartbeat renews process id's heartbeat (docs/delivery.md,
	// "Crashes") at the database's clock, registering it first when
	// register is set. It answers false when the row is gone: another
	// process found it lapsed and took its jobs over (RecoverLeases), so
	// nothing it holds is its own any more. A lapsed row not yet taken
	// over is renewed: its jobs stay its own.
	Heartbeat(ctx context.Context, id string, register bool) (alive bool, err error)
	// Deregister deletes a stopping process's heartbeat, once it gave its
	// jobs back and wrote its results.
	Deregister(ctx context.Context, id string) error
	// LeasedTo lists the jobs in flight under owner's name leased (claimed
	// or born) before before: the process gives back those it does not
	// hold.
	LeasedTo(ctx context.Context, owner string, before time.Time) ([]LeasedJob, error)
	// Reclaim returns, with their events and subscriptions and in arrival
	// order, the jobs in flight under a lease token: what a claim, a
	// hand-off or a birth whose transaction's answer was lost took after
	// all (none when it did not commit). The caller holds them as if the
	// answer had come: a job leased to a process that does not know it
	// would stand, unsent, ahead of its ordered subscription's later jobs.
	Reclaim(ctx context.Context, token string) ([]Claimed, error)
	// WakeJobs makes the waiting (pending) jobs of these subscriptions due
	// now and lifts their holds: their destination was found healthy again
	// (a passing verification, a breaker that closed), so they need not
	// wait out a retry or a shed.
	WakeJobs(ctx context.Context, subscriptionIDs []string) (int, error)
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
	// ListenJobs tells p.OnJobs of the jobs ingest creates, as soon as
	// their transaction commits, until ctx ends: those of this process,
	// and on PostgreSQL those of every process sharing the database (one
	// LISTEN connection of its own, outside the pool's budgets, dialed
	// again when lost). It is how new jobs wake dispatch instead of
	// dispatch polling for them (docs/performance.md).
	ListenJobs(ctx context.Context, p ListenParams) error

	// ListJobs pages a subscription's jobs, newest first.
	ListJobs(ctx context.Context, p ListJobsParams) ([]hub.Job, error)
	// GetJob returns one of tenantID's jobs with its attempts, oldest first.
	GetJob(ctx context.Context, tenantID, id string) (hub.Job, []hub.Attempt, error)
	// ReplayJob creates a fresh job for the same event and subscription,
	// replayed or not before, and marks the job replayed by by (who
	// asked) as the fresh one; it returns the fresh job.
	ReplayJob(ctx context.Context, tenantID, id, by string) (hub.Job, error)
	// ReplaySubscription creates a fresh job for each of a subscription's
	// jobs in Status completed since Since that was not replayed yet (at
	// most MaxReplay), marks each replayed by p.By, and says how many
	// matched and how many of those were replayed already.
	ReplaySubscription(ctx context.Context, p ReplayParams) (ReplayResult, error)
}

type ClaimParams struct {
	Batch int
	Lease time.Duration
	// Subscriptions, when set, limits the claim to these subscriptions:
	// a dispatcher that just finished their jobs knows they have free
	// slots, and a targeted claim costs in proportion to the list, not to
	// every subscription.
	Subscriptions []string
	// Exclude lists subscriptions not to claim for: their destination has
	// all its share of the process's attempts in flight.
	Exclude []string
	// Run, when above 1, lets an ordered subscription (max_in_flight 1)
	// with nothing in flight offer up to Run of its next due jobs, in
	// arrival order: a run the claimer attempts strictly one at a time.
	// The jobs after the first are marked run-ahead (see RecoverLeases).
	Run int
	// Owner is the claiming dispatcher's identity (BirthOffer.Owner): an
	// ordered subscription whose jobs it claims is marked leased by it, so
	// that ingest may append new jobs behind them, born leased to it.
	Owner string
	// Token, when set, is the lease token the claimed jobs get (the store
	// makes one otherwise): a caller whose claim failed with an unknown
	// outcome (its answer lost) finds with Reclaim what it took after all.
	Token string
}

// BirthOffer is what this process's dispatcher offers an ingest
// transaction (docs/architecture.md, "The writer"): room for up
// to Room jobs born leased to it under Token for Lease, none of them of
// the Exclude subscriptions. Owner names the dispatcher: an ordered
// subscription whose in-flight jobs it leased may take more, behind them.
type BirthOffer struct {
	Owner   string
	Token   string
	Lease   time.Duration
	Room    int
	Exclude []string
}

// RecoveredAttemptError is the error of the attempt a lease recovery logs.
const RecoveredAttemptError = "the worker stopped mid-attempt"

type RenewParams struct {
	Leases []JobLease
	Lease  time.Duration
}

// Claimed is a job under a lease with what its attempt needs.
type Claimed struct {
	Job          hub.Job
	LeaseToken   string
	Event        hub.Event
	Subscription hub.Subscription
	// HealedAt is when a process last found the subscription's destination
	// healthy again (WakeJobs: its breaker closed, a verify passed); zero
	// when never, and always on SQLite, which serves one process. Another
	// process whose breaker opened before it closes its own.
	HealedAt time.Time
	// Behind: a job born leased behind earlier jobs of its ordered
	// subscription in flight, leased to the same dispatcher; it may be sent
	// only after them.
	Behind bool
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
	// Shed: the destination's breaker was open, or the process had its
	// share of attempts to the destination in flight, so nothing was sent.
	Shed bool
	// Hold: a breaker shed it until NextAttemptAt; an ordered
	// subscription is then held until that time (ShedHolds), in every
	// process, so that none of its later jobs is attempted before this one.
	Hold bool
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

// AutoDisable are the gates of auto-disable
// (docs/breakers.md).
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
	// Limit bounds the jobs recovered by their own lease's end (those of
	// no process with a heartbeat); a lapsed process's are all recovered
	// at once.
	Limit int
	// Lease is how long a heartbeat stays fresh: every job of a process
	// whose heartbeat is older (on the database's clock) is recovered, and
	// its heartbeat deleted. Zero recovers by the jobs' own lease ends only.
	Lease time.Duration
	// Self is the recovering process: never taken over by itself (it
	// reaches the database, so it renews its own heartbeat instead).
	Self string
	// Reconcile also repairs in-flight counts that disagree with the jobs
	// (they never should): the maintenance pass asks for it, the quick
	// look for expired leases between passes does not.
	Reconcile bool
}

type RecoverResult struct {
	Recovered int // back to pending
	Poisoned  int // dead-lettered as poison
	Unstarted int // run-ahead jobs back to pending, uncounted
	Processes int // processes whose heartbeat lapsed: their jobs were taken over
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
	By             string // who asked: the marks' replayed_by
}

// ReplayResult is what a bulk replay did.
type ReplayResult struct {
	Replayed        int // fresh jobs made
	Matched         int // jobs in Status completed since Since
	AlreadyReplayed int // of Matched, those replayed before: skipped
}

// Lost lists the leases of asked that are not among renewed: RenewLeases'
// answer.
func Lost(asked []JobLease, renewed []string) []string {
	ok := make(map[string]bool, len(renewed))
	for _, id := range renewed {
		ok[id] = true
	}
	var lost []string
	for _, l := range asked {
		if !ok[l.JobID] {
			lost = append(lost, l.JobID)
		}
	}
	return lost
}

// RecoveredAttempt is the attempt a lease recovery logs for a job claimed
// at claimedAt and found abandoned at now: no answer came.
func RecoveredAttempt(claimedAt, now time.Time) *hub.Attempt {
	return &hub.Attempt{ID: hub.NewID("att", now), StartedAt: claimedAt, Duration: max(now.Sub(claimedAt), 0),
		Error: RecoveredAttemptError}
}
