// Package destination is what the broker destinations (RabbitMQ, Kafka;
// SPEC 22; NATS JetStream, SPEC 29) share: the message one attempt publishes and the Sender that
// publishes it. Webhooks are internal/webhook's.
package destination

import (
	"context"
	"net/http"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Target is a broker destination with its credentials opened (in memory
// only).
type Target struct {
	hub.Destination
	Credentials hub.Credentials
}

// Message is what one attempt publishes: the stored body unchanged and the
// headers a webhook attempt of the same event would carry.
type Message struct {
	ID          string // the ce-id (probe_<random> for a verification)
	EventType   string // <resource>.<event>, or hub.verification
	TenantID    string
	ContentType string
	Body        []byte
	Time        time.Time // of the attempt
	// Headers are the ce-*, X-Lerian-* and webhook-* values, named as
	// SPEC 5 writes them (HeadersOf).
	Headers map[string]string
	// Probe marks a verification message: the broker's confirmation is
	// enough, even if no queue is bound for it (a tenant binds its event
	// types, not hub.verification).
	Probe bool
}

// Sender publishes to the broker destinations of one type. Send returns
// nil only once the broker confirmed the message; ctx bounds the wait
// (the delivery timeout). Connections are kept per destination and reused.
type Sender interface {
	Send(ctx context.Context, t Target, m Message) error
	Close() error
}

// HeadersOf turns the headers of a webhook attempt (webhook.SignedHeaders)
// into a broker's: ce-*, webhook-*, traceparent and extensions in lower
// case, X-Lerian-* as written; Content-Type and User-Agent are left to the
// message's own properties.
func HeadersOf(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		if len(vs) == 0 {
			continue
		}
		switch lk := strings.ToLower(k); {
		case lk == "content-type", lk == "user-agent":
		case strings.HasPrefix(lk, "x-lerian-"):
			out[http.CanonicalHeaderKey(k)] = vs[0]
		default:
			out[lk] = vs[0]
		}
	}
	return out
}

// RoutingKey expands a routing key template: {type} is the event type,
// {tenant} the tenant.
func RoutingKey(template, eventType, tenant string) string {
	return strings.NewReplacer("{type}", eventType, "{tenant}", tenant).Replace(template)
}
