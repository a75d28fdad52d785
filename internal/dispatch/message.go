package dispatch

import (
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// message is what an attempt of ev sends: the step where the stored event
// becomes the message. The body is the event's data unchanged; the
// headers are the hub's (destination.EventHeaders); the send path signs
// it.
func message(ev hub.Event, deliveryID, traceparent string, now time.Time) destination.Message {
	return destination.Message{
		ID:          ev.ID,
		EventType:   ev.EventType,
		TenantID:    ev.TenantID,
		ContentType: ev.DataContentType,
		Body:        ev.Data,
		Time:        now,
		Headers:     destination.EventHeaders(ev, deliveryID, traceparent),
	}
}
