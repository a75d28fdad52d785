package destination

import (
	"net/http"
	"strconv"

	hub "github.com/lerianstudio/streaming-hub"
)

// EventHeaders are the hub's headers of an attempt of ev: X-Lerian-* and the
// CloudEvents HTTP binary-mode ce-* attributes as ingested, and the W3C
// trace context: traceparent (the attempt's own, "" for an event without
// trace context) and the event's tracestate unchanged. The Standard
// Webhooks signature is added by the send path (destination.Registry.Send),
// a webhook's auth and custom headers by its driver.
func EventHeaders(ev hub.Event, deliveryID, traceparent string) http.Header {
	h := http.Header{
		"X-Lerian-Event-Id":    {ev.ID},
		"X-Lerian-Delivery-Id": {deliveryID},
		"X-Lerian-Event-Type":  {ev.EventType},
		"X-Lerian-Tenant-Id":   {ev.TenantID},
		// Lower-case keys are sent as written: exactly the attribute names.
		"ce-id":            {ev.ID},
		"ce-type":          {ev.Type},
		"ce-source":        {ev.Source},
		"ce-specversion":   {ev.SpecVersion},
		"ce-time":          {ev.Time},
		"ce-tenantid":      {ev.TenantID},
		"ce-schemaversion": {ev.SchemaVersion},
	}
	if ev.Sequence != 0 {
		// Every stored event has one; a test event has none.
		h["X-Lerian-Sequence"] = []string{strconv.FormatInt(ev.Sequence, 10)}
	}
	if ev.ProducerKeyID != "" {
		// The producer key whose signature verified at ingest
		// (docs/lerian-platform.md).
		h["X-Lerian-Producer-Key"] = []string{ev.ProducerKeyID}
	}
	if ev.Subject != "" {
		h["ce-subject"] = []string{ev.Subject}
	}
	if ev.DataSchema != "" {
		h["ce-dataschema"] = []string{ev.DataSchema}
	}
	for k, v := range ev.Extensions {
		h[k] = []string{v}
	}
	if traceparent != "" {
		h["traceparent"] = []string{traceparent}
		if ev.TraceState != "" {
			h["tracestate"] = []string{ev.TraceState}
		}
	}
	return h
}
