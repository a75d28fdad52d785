package consumer

import (
	"net/http"
	"strings"
)

// Headers the hub sets on every delivery.
const (
	HeaderEventID    = "X-Lerian-Event-Id"    // the event's id: the same on every attempt
	HeaderDeliveryID = "X-Lerian-Delivery-Id" // new for every attempt
	HeaderEventType  = "X-Lerian-Event-Type"  // e.g. transaction.posted, or hub.verification
	HeaderTenantID   = "X-Lerian-Tenant-Id"   // the event's tenant
	HeaderSequence   = "X-Lerian-Sequence"    // per-tenant arrival sequence: 1, 2, 3, ...

	// Standard Webhooks headers: the signature covers
	// webhook-id.webhook-timestamp.body and nothing else.
	HeaderWebhookID        = "webhook-id"
	HeaderWebhookTimestamp = "webhook-timestamp"
	HeaderWebhookSignature = "webhook-signature"
)

// ProbeEventType is the event type of the hub's verification probes.
const ProbeEventType = "hub.verification"

// headerValues returns the values of name in h. Servers canonicalize header
// keys, but a caller may hand Verify a map built by hand with raw lower-case
// keys (as Standard Webhooks documents them), so a case-insensitive scan
// backs up the canonical lookup.
func headerValues(h http.Header, name string) []string {
	if vs := h.Values(name); len(vs) > 0 {
		return vs
	}
	for k, vs := range h {
		if strings.EqualFold(k, name) {
			return vs
		}
	}
	return nil
}

// header returns the first value of name in h, "" when absent.
func header(h http.Header, name string) string {
	if vs := headerValues(h, name); len(vs) > 0 {
		return vs[0]
	}
	return ""
}
