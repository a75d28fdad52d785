// Package notify is the notification contract of the example and the code
// that reads it: the thin CloudEvent the payments service appends to a Redis
// stream, and a consumer-group Reader that hands each entry to a Handler with
// the pending-first, claim, acknowledge and dead-letter rules the receivers
// share.
//
// The event says only what changed (which payment, which version), never what
// the payment is. Receivers that need detail fetch it from the source.
package notify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// SpecVersion is the CloudEvents version every notification declares.
const SpecVersion = "1.0"

// ContentType is the media type of the data member.
const ContentType = "application/json"

// DefaultSource is the ce-source of the payments service. The hub derives a
// producer's topic namespace from the last path segment: "payments".
const DefaultSource = "//lerian.studio/payments"

// Event types the payments service emits. The hub's event type is the
// <resource>.<event> tail: payment.approved, payment.refunded, ...
const (
	TypePaymentCreated  = "studio.lerian.payment.created"
	TypePaymentApproved = "studio.lerian.payment.approved"
	TypePaymentRefunded = "studio.lerian.payment.refunded"
	TypePaymentRemoved  = "studio.lerian.payment.removed"
)

// StreamField is the stream entry field that holds the event JSON.
const StreamField = "event"

// Event is a CloudEvent in structured JSON mode. Data is kept raw so the exact
// bytes written by the Lua script travel on unchanged (to Kafka, to a DLQ).
type Event struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Time            time.Time       `json:"time"`
	Subject         string          `json:"subject"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data,omitempty"`
}

// Data is the whole payload: the payment's id and the version the write
// produced. Nothing about the payment itself, on purpose.
type Data struct {
	PaymentID string `json:"paymentId"`
	Version   int64  `json:"version"`
}

// NewEnvelope returns an event of type ceType about paymentID with a fresh id
// and time and no data. The data member is added by the Lua script that
// performs the write, because only the script knows the version it wrote.
func NewEnvelope(source, ceType, paymentID string, now time.Time) Event {
	return Event{
		SpecVersion:     SpecVersion,
		ID:              uuid.NewString(),
		Source:          source,
		Type:            ceType,
		Time:            now.UTC(),
		Subject:         paymentID,
		DataContentType: ContentType,
	}
}

// EnvelopeJSON renders an event without its data member. The result is a JSON
// object the Lua script extends with ,"data":{...} before the closing brace.
func EnvelopeJSON(ev Event) (string, error) {
	if ev.Data != nil {
		return "", errors.New("envelope must not carry data: the write script adds it")
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return "", fmt.Errorf("marshal envelope %s: %w", ev.ID, err)
	}
	return string(b), nil
}

// Decode parses and validates a stored notification. It is strict on purpose:
// a data member with any field besides paymentId and version is rejected, so
// a producer that starts leaking payment fields into the event is caught.
func Decode(raw []byte) (Event, Data, error) {
	var ev Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return Event{}, Data{}, fmt.Errorf("decode event: %w", err)
	}
	switch {
	case ev.SpecVersion != SpecVersion:
		return Event{}, Data{}, fmt.Errorf("specversion %q, want %q", ev.SpecVersion, SpecVersion)
	case ev.ID == "":
		return Event{}, Data{}, errors.New("event has no id")
	case ev.Source == "":
		return Event{}, Data{}, errors.New("event has no source")
	case ev.Type == "":
		return Event{}, Data{}, errors.New("event has no type")
	case ev.Time.IsZero():
		return Event{}, Data{}, errors.New("event has no time")
	case len(ev.Data) == 0:
		return Event{}, Data{}, errors.New("event has no data")
	}
	d, err := DecodeData(ev.Data)
	if err != nil {
		return Event{}, Data{}, err
	}
	if ev.Subject != d.PaymentID {
		return Event{}, Data{}, fmt.Errorf("subject %q differs from data.paymentId %q", ev.Subject, d.PaymentID)
	}
	return ev, d, nil
}

// DecodeData parses the thin data member, rejecting unknown fields.
func DecodeData(raw []byte) (Data, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var d Data
	if err := dec.Decode(&d); err != nil {
		return Data{}, fmt.Errorf("decode data: %w", err)
	}
	if d.PaymentID == "" {
		return Data{}, errors.New("data has no paymentId")
	}
	if d.Version < 1 {
		return Data{}, fmt.Errorf("data version %d, want >= 1", d.Version)
	}
	return d, nil
}
