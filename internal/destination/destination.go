// Package destination is what every destination driver shares
// (docs/brokers.md): the Target and
// Message of one attempt, the Driver interface the webhook, RabbitMQ, Kafka,
// NATS and Pub/Sub drivers implement (in the packages under this one), and
// the one send path, Registry.Send, that dispatch, the test event and the
// verification probe all go through. It also holds what the drivers have in
// common: the SSRF-safe dialer, Standard Webhooks signing, the sealed secrets
// and the description of a transport error.
package destination

import (
	"context"
	"net/http"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Target is a destination with its credentials opened (in memory only).
type Target struct {
	hub.Destination
	// Credentials are the destination's: a webhook's auth (bearer, basic,
	// header), a broker's URL userinfo or SASL password.
	Credentials hub.Credentials
	// Secrets are the signing secrets valid at the attempt, current first.
	Secrets []string
	// ClientKey is the PEM key of Destination.ClientCertificate (mutual
	// TLS): see TLSConfig.
	ClientKey string
	// SubscriptionID is the subscription the target is of: what caches
	// kept per subscription (an OAuth 2.0 token) are keyed by.
	SubscriptionID string
}

// Message is what one attempt sends: the body unchanged and the headers,
// in one form for every driver. A webhook sends Headers as its request's;
// a broker turns them into its own with BrokerHeaders.
type Message struct {
	ID          string // the ce-id and webhook-id (probe_<random> for a verification)
	EventType   string // <resource>.<event>, or hub.verification
	TenantID    string
	ContentType string
	Body        []byte
	Time        time.Time // of the attempt: the signature's timestamp
	// Headers are the hub's (X-Lerian-*, ce-*, traceparent) as the caller
	// builds them; Registry.Send adds Content-Type, User-Agent and the
	// Standard Webhooks signature (webhook-id, -timestamp, -signature).
	Headers http.Header
	// Probe marks a verification message: a broker's confirmation is
	// enough, even if no queue is bound for it (a tenant binds its event
	// types, not hub.verification).
	Probe bool
	// Challenge, on a probe, is what a destination that answers (a
	// webhook) must echo in its answer's body to pass.
	Challenge string
}

// Driver sends to the destinations of one type. Send makes one attempt:
// ctx carries the delivery timeout as its deadline. Connections are kept
// per destination and reused; Close closes them.
type Driver interface {
	Send(ctx context.Context, t Target, m Message) Result
	Close() error
}

// Result is one attempt's outcome. Err is nil only when the destination
// took the message: a webhook's 2xx (with the challenge, for a probe), a
// broker's confirmation. Its text is for tenants to read.
type Result struct {
	Status   int         // the HTTP status; 0 when no answer came or for a broker
	Header   http.Header // the answer's headers (webhook)
	Body     string      // an excerpt of the answer's body, cleaned (webhook)
	Duration time.Duration
	Err      error
	// Sent are the headers the attempt sent, as the attempt log keeps
	// them (hub.Attempt.RequestHeaders): a webhook's request headers
	// (SentHeaders), a broker's message headers and properties. Nil when
	// nothing was sent.
	Sent map[string]string
}
