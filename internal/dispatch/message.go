package dispatch

import (
	"net/http"
	"strconv"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// message is what an attempt of ev sends: the step where the stored event
// becomes the message. The body is the event's data unchanged; the
// headers are the hub's (eventHeaders); the send path signs it.
func message(ev hub.Event, deliveryID, traceparent string, now time.Time) destination.Message {
	return destination.Message{
		ID:          ev.ID,
		EventType:   ev.EventType,
		TenantID:    ev.TenantID,
		ContentType: ev.DataContentType,
		Body:        ev.Data,
		Time:        now,
		Headers:     eventHeaders(ev, deliveryID, traceparent),
	}
}

// eventHeaders are the hub's headers of an attempt: X-Lerian-* and the
// CloudEvents HTTP binary-mode ce-* attributes as ingested, and the W3C
// trace context: traceparent (the attempt's own, "" for an event without
// trace context) and the event's tracestate unchanged. The Standard
// Webhooks signature is added by the send path (destination.Registry.Send),
// a webhook's auth and custom headers by its driver.
func eventHeaders(ev hub.Event, deliveryID, traceparent string) http.Header {
	h := http.Header{
		"X-Lerian-Event-Id":    {ev.ID},
		"X-Lerian-Delivery-Id": {deliveryID},
		"X-Lerian-Event-Type":  {ev.EventType},
		"X-Lerian-Tenant-Id":   {ev.TenantID},
		"X-Lerian-Sequence":    {strconv.FormatInt(ev.Sequence, 10)},
		// Lower-case keys are sent as written: exactly the attribute names.
		"ce-id":            {ev.ID},
		"ce-type":          {ev.Type},
		"ce-source":        {ev.Source},
		"ce-specversion":   {ev.SpecVersion},
		"ce-time":          {ev.Time},
		"ce-tenantid":      {ev.TenantID},
		"ce-schemaversion": {ev.SchemaVersion},
	}
	if ev.ProducerKeyID != "" {
		// The producer key whose signature verified at ingest (SPEC 27).
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
