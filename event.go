package hub

import "time"

// Event is one accepted CloudEvent in the inbox. Context attributes come from
// the Kafka record's ce- headers; Data is the record value, stored unchanged
// and never parsed.
type Event struct {
	TenantID string // the validated ce-tenantid: the only source of tenancy
	ID       string // ce-id; unique per tenant
	Sequence int64  // arrival sequence, per tenant, assigned by the store

	SpecVersion     string
	Type            string // ce-type, e.g. studio.lerian.transaction.posted
	EventType       string // <resource>.<event>, e.g. transaction.posted
	Source          string
	Subject         string
	Time            string // ce-time as received: a valid RFC 3339 timestamp
	SchemaVersion   string // MAJOR.MINOR.PATCH
	SchemaMajor     int
	DataContentType string
	DataSchema      string
	// Extensions holds every other ce- header, keyed by its full lower-case
	// header name (e.g. "ce-resourcetype"), so it can be sent on unchanged.
	Extensions map[string]string

	Data []byte

	// TraceParent and TraceState are the event's W3C trace context: the
	// producer's (traceparent / tracestate, or ce-traceparent /
	// ce-tracestate, headers of the record) or, without a valid one, a
	// trace started at ingest. Every attempt sends TraceParent's trace id
	// with a span id of its own, and TraceState unchanged. Empty for events
	// stored before the hub kept trace context.
	TraceParent string
	TraceState  string

	// ProducerKeyID is the id of the producer key whose signature verified
	// (ce-sigkid, docs/lerian-platform.md); "" for an unsigned event.
	ProducerKeyID string

	Topic      string
	Partition  int32
	Offset     int64
	ReceivedAt time.Time
}

// DefaultContentType applies when a record names none.
const DefaultContentType = "application/json"

// Rejection is a record that broke the wire contract, kept (bounded) for
// operators.
type Rejection struct {
	ID         int64
	Topic      string
	Partition  int32
	Offset     int64
	CEID       string // the ce-id header as received, when there was one
	Headers    map[string]string
	Reason     string // names the header and the rule, e.g. "missing ce-type"
	RejectedAt time.Time
}

// Verdict is what ingest decides for each record.
type Verdict string

const (
	Accept  Verdict = "accept"  // valid and admitted: persisted
	Reject  Verdict = "reject"  // breaks the wire contract
	Discard Verdict = "discard" // well formed but not admitted
)

// Discard reasons.
const (
	ReasonDuplicate      = "duplicate"
	ReasonUnknownTenant  = "unknown_tenant"
	ReasonInactiveTenant = "inactive_tenant"
	ReasonSystemEvent    = "system_event" // ce-systemevent: addressed to no tenant
)

// ReasonTenantNotServed is the rejection of a record whose ce-tenantid is
// not the tenant a single-tenant hub serves (docs/operations.md,
// "Single-tenant mode"): kept with the other rejections, never delivered.
const ReasonTenantNotServed = "tenant_not_served"

// ReasonAccepted is the reason label of accepted records in metrics.
const ReasonAccepted = "accepted"
