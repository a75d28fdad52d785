package receivers

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// Notification is what the notifier tells the customer: the fact the event
// announced, described with the payment's current state as fetched.
type Notification struct {
	EventID      string
	EventType    string // e.g. studio.lerian.payment.approved
	EventVersion int64  // the version the event announced
	Payment      Payment
	// Superseded is true when the payment had moved past the event's version
	// by the time it was fetched (e.g. refunded before the approval was
	// read). Payment is then newer than the event; the later event(s) will be
	// notified too, each with the state current when they are handled.
	Superseded bool
}

// Sink delivers a notification to the customer (push, SMS, e-mail...).
// Delivery is at least once: a sink that must not repeat itself dedupes on
// EventID.
type Sink interface {
	Notify(ctx context.Context, n Notification) error
}

// RecordingSink keeps what it was asked to send. Tests assert on it.
type RecordingSink struct {
	mu   sync.Mutex
	sent []Notification
}

// Notify records n.
func (s *RecordingSink) Notify(_ context.Context, n Notification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, n)
	return nil
}

// Sent returns a copy of everything recorded so far.
func (s *RecordingSink) Sent() []Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Notification(nil), s.sent...)
}

// WriterSink prints one line per notification, as a customer would read it.
type WriterSink struct {
	W io.Writer
}

// Notify prints n.
func (s WriterSink) Notify(_ context.Context, n Notification) error {
	if _, err := fmt.Fprintln(s.W, Describe(n)); err != nil {
		return fmt.Errorf("write notification %s: %w", n.EventID, err)
	}
	return nil
}

// Describe renders a notification for a person.
func Describe(n Notification) string {
	p := n.Payment
	line := fmt.Sprintf("to %s: PIX of %s to %s — event %s (v%d), current status %s (v%d)",
		p.PayerAccount, money(p.AmountCents, p.Currency), p.PayeeAccount,
		shortType(n.EventType), n.EventVersion, p.Status, p.Version)
	if n.Superseded {
		line += " [superseded: the payment changed after this event]"
	}
	return line
}

func money(cents int64, currency string) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%s %d.%02d", sign, currency, cents/100, cents%100)
}

func shortType(t string) string {
	const prefix = "studio.lerian."
	if len(t) > len(prefix) && t[:len(prefix)] == prefix {
		return t[len(prefix):]
	}
	return t
}
