package hub

import (
	"fmt"
	"time"
)

// JobStatus is where a delivery job is in its life.
type JobStatus string

const (
	JobPending      JobStatus = "pending"       // waiting for its (next) attempt
	JobInFlight     JobStatus = "in_flight"     // claimed by a worker under a lease
	JobSucceeded    JobStatus = "succeeded"     // the destination answered 2xx
	JobDeadLettered JobStatus = "dead_lettered" // the hub stopped trying
)

// ParseJobStatus checks a status given by a caller.
func ParseJobStatus(s string) (JobStatus, error) {
	switch st := JobStatus(s); st {
	case JobPending, JobInFlight, JobSucceeded, JobDeadLettered:
		return st, nil
	}
	return "", fmt.Errorf("%q is not one of pending, in_flight, succeeded, dead_lettered", s)
}

// Dead-letter reasons.
const (
	DeadLetterExhausted            = "exhausted"             // every attempt of the curve failed
	DeadLetterPoison               = "poison"                // leases kept expiring without a result
	DeadLetterSubscriptionDisabled = "subscription_disabled" // its subscription was disabled
	DeadLetterSubscriptionDeleted  = "subscription_deleted"  // its subscription was deleted
)

// Job is one event to deliver to one subscription.
type Job struct {
	ID             string
	TenantID       string
	SubscriptionID string
	EventSequence  int64  // the event's arrival sequence (with TenantID, its key)
	EventID        string // the ce-id
	// EventType is the event's type (e.g. transaction.posted), read with
	// the job by the listings and GetJob; "" when the event is gone
	// (retention) or on reads that do not look it up (claims).
	EventType        string
	Status           JobStatus
	Attempts         int // attempts with a recorded result
	NextAttemptAt    time.Time
	Recoveries       int // leases that expired without a result
	DeadLetterReason string
	LastError        string
	EnqueuedAt       time.Time // when the job first became due: the event's arrival, or its replay; end-to-end latency starts here
	CreatedAt        time.Time
	UpdatedAt        time.Time
	CompletedAt      *time.Time // when it succeeded or was dead-lettered
	// ReplayedAt, ReplayedBy and ReplayedAs mark a job that was replayed:
	// when (the last time), who asked ("admin", an API key's id, an
	// access-manager subject, "portal:<link id>") and the fresh job it
	// made. Nil and "" when it never was.
	ReplayedAt *time.Time
	ReplayedBy string
	ReplayedAs string
}

// Attempt is one HTTP request of a job; its ID is the X-Lerian-Delivery-Id
// the destination saw.
type Attempt struct {
	ID           string
	JobID        string
	StartedAt    time.Time
	Duration     time.Duration
	StatusCode   int    // 0 when no answer came
	Error        string // why it failed; "" on success
	ResponseBody string // at most MaxResponseBody bytes
	// RequestHeaders are the headers the attempt sent, as the destination
	// got them: a webhook's HTTP request headers, a broker's message
	// headers and properties. A header sent twice has its values joined
	// with ", ". Secrets (Authorization, a subscription's auth header)
	// read Redacted. Nil when nothing was sent, or for attempts logged
	// before the hub kept them.
	RequestHeaders map[string]string
	// ResponseHeaders are a webhook's answer's headers, bounded: at most
	// MaxResponseHeaders of them, each value at most
	// MaxResponseHeaderValue bytes of valid UTF-8. Nil for brokers.
	ResponseHeaders map[string]string
}

// MaxResponseBody bounds what is kept of a destination's answer.
const MaxResponseBody = 4096

// Bounds on what is kept of a destination's answer's headers.
const (
	MaxResponseHeaders     = 32
	MaxResponseHeaderValue = 256
)

// Redacted is what an attempt's log shows for a secret header's value.
const Redacted = "[redacted]"

// DefaultRetrySchedule is the back-off curve: 8 steps, about 28 hours, so a
// job gets 1 + 8 attempts.
var DefaultRetrySchedule = []time.Duration{
	5 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// Schedule is the curve a subscription's jobs follow: its own override
// when it parses, else the default (old or hand-edited data never fails a
// delivery).
func (s *Subscription) Schedule() []time.Duration {
	if s.RetrySchedule != nil {
		if steps, err := ParseRetrySchedule(s.RetrySchedule); err == nil {
			return steps
		}
	}
	return DefaultRetrySchedule
}

// SecretsAAD binds a subscription's sealed secrets to its row: a blob copied
// onto another subscription does not open.
func (s *Subscription) SecretsAAD() []byte {
	return []byte("subscription/" + s.TenantID + "/" + s.ID)
}
