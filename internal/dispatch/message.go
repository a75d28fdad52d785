package dispatch

import (
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// message is what an attempt of ev sends: the step where the stored event
// becomes the message. The body and its content type are the event's data,
// or what the subscription's transform made of it; the headers are the
// hub's (destination.EventHeaders); the send path signs it.
func message(ev hub.Event, body []byte, contentType, deliveryID, traceparent string, now time.Time) destination.Message {
	return destination.Message{
		ID:          ev.ID,
		EventType:   ev.EventType,
		TenantID:    ev.TenantID,
		ContentType: contentType,
		Body:        body,
		Time:        now,
		Headers:     destination.EventHeaders(ev, deliveryID, traceparent),
	}
}
