package consumer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Errors of a signed request whose hub headers are inconsistent.
var (
	// ErrEventIDMismatch: X-Lerian-Event-Id differs from webhook-id. The hub
	// sends the same id in both; only webhook-id is signed, so a mismatch
	// means the request was altered (e.g. to slip a replay past dedupe).
	ErrEventIDMismatch = errors.New("consumer: X-Lerian-Event-Id does not match webhook-id")
	// ErrInvalidSequence: X-Lerian-Sequence is present but not an integer.
	ErrInvalidSequence = errors.New("consumer: X-Lerian-Sequence is not an integer")
)

// Event is the metadata of a verified delivery.
//
// ID and Timestamp are covered by the signature. The other fields come from
// headers the Standard Webhooks signature does not cover: trust them as far
// as you trust the transport (TLS), and read anything security-relevant
// from the signed body.
type Event struct {
	ID         string    // the event's id (webhook-id = X-Lerian-Event-Id): the same on every attempt
	DeliveryID string    // X-Lerian-Delivery-Id: new for every attempt
	Type       string    // X-Lerian-Event-Type
	TenantID   string    // X-Lerian-Tenant-Id
	Sequence   int64     // X-Lerian-Sequence: per-tenant arrival order; 0 when absent (probes)
	Timestamp  time.Time // webhook-timestamp: when this attempt was signed
}

// IsProbe reports whether the delivery is a verification probe.
func (e Event) IsProbe() bool { return e.Type == ProbeEventType }

// dedupeKey is what the middleware dedupes on. Event ids are unique per
// tenant only (the hub itself dedupes ingest on tenant and ce-id), so a
// receiver serving several tenants must not mistake one tenant's event for
// another's. "/" cannot occur in a tenant id, so the key is unambiguous.
func (e Event) dedupeKey() string {
	if e.TenantID == "" {
		return e.ID
	}
	return e.TenantID + "/" + e.ID
}

// eventFromHeaders reads the metadata of a request whose signature was
// verified (so webhook-id and webhook-timestamp are present and valid).
func eventFromHeaders(h http.Header) (Event, error) {
	ev := Event{
		ID:         header(h, HeaderWebhookID),
		DeliveryID: header(h, HeaderDeliveryID),
		Type:       header(h, HeaderEventType),
		TenantID:   header(h, HeaderTenantID),
	}
	if id := header(h, HeaderEventID); id != "" && id != ev.ID {
		return Event{}, ErrEventIDMismatch
	}
	if ts, err := strconv.ParseInt(header(h, HeaderWebhookTimestamp), 10, 64); err == nil {
		ev.Timestamp = time.Unix(ts, 0)
	}
	if s := header(h, HeaderSequence); s != "" {
		seq, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Event{}, fmt.Errorf("%w: %q", ErrInvalidSequence, truncate(s, 32))
		}
		ev.Sequence = seq
	}
	return ev, nil
}

type eventKey struct{}

// EventFrom returns the metadata of the delivery being handled, set by
// Middleware; false outside it.
func EventFrom(ctx context.Context) (Event, bool) {
	ev, ok := ctx.Value(eventKey{}).(Event)
	return ev, ok
}

// WithEvent returns ctx carrying ev, for testing handlers that read
// EventFrom without going through Middleware.
func WithEvent(ctx context.Context, ev Event) context.Context {
	return context.WithValue(ctx, eventKey{}, ev)
}
