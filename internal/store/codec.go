package store

import (
	"encoding/json"
	"fmt"

	hub "github.com/lerianstudio/streaming-hub"
)

// SubscriptionJSON holds a subscription's JSON-encoded columns, the same
// for every driver.
type SubscriptionJSON struct {
	EventTypes    string
	Headers       string
	RetrySchedule *string // nil: the default curve
	Filters       *string // nil: none
}

// EncodeSubscription encodes s's JSON columns.
func EncodeSubscription(s hub.Subscription) (SubscriptionJSON, error) {
	var out SubscriptionJSON
	et, err := json.Marshal(s.EventTypes)
	if err != nil {
		return out, err
	}
	headers := s.Destination.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	h, err := json.Marshal(headers)
	if err != nil {
		return out, err
	}
	out.EventTypes, out.Headers = string(et), string(h)
	if s.RetrySchedule != nil {
		rs, err := json.Marshal(s.RetrySchedule)
		if err != nil {
			return out, err
		}
		str := string(rs)
		out.RetrySchedule = &str
	}
	if len(s.Filters) > 0 {
		f, err := json.Marshal(s.Filters)
		if err != nil {
			return out, err
		}
		str := string(f)
		out.Filters = &str
	}
	return out, nil
}

// DecodeSubscription fills s's fields from its JSON columns.
func DecodeSubscription(s *hub.Subscription, eventTypes, headers, retrySchedule, filters []byte) error {
	if err := json.Unmarshal(eventTypes, &s.EventTypes); err != nil {
		return fmt.Errorf("subscription %s: event_types: %w", s.ID, err)
	}
	if err := json.Unmarshal(headers, &s.Destination.Headers); err != nil {
		return fmt.Errorf("subscription %s: destination_headers: %w", s.ID, err)
	}
	if len(retrySchedule) > 0 {
		// Old or hand-edited data may hold anything here; delivery falls
		// back to the default curve rather than failing, so decode
		// leniently and let the dispatcher judge.
		if err := json.Unmarshal(retrySchedule, &s.RetrySchedule); err != nil {
			s.RetrySchedule = []string{string(retrySchedule)}
		}
	}
	s.Filters = Filters(filters)
	return nil
}
