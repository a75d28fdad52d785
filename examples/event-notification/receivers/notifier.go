package receivers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
)

// NotifierGroup is the notifier's consumer group.
const NotifierGroup = "customer-notifier"

// Notifier tells the customer about approvals and refunds. The notification
// carries only the payment id and version, so the notifier fetches the
// payment for the amount and accounts.
type Notifier struct {
	client *PaymentsClient
	sink   Sink
	types  map[string]bool
	log    *slog.Logger
}

// NewNotifier returns a notifier for the given event types (default: approved
// and refunded). Other types are acknowledged without a fetch.
func NewNotifier(client *PaymentsClient, sink Sink, log *slog.Logger, types ...string) (*Notifier, error) {
	if client == nil {
		return nil, errors.New("notifier: payments client is required")
	}
	if sink == nil {
		return nil, errors.New("notifier: sink is required")
	}
	if log == nil {
		log = slog.Default()
	}
	if len(types) == 0 {
		types = []string{notify.TypePaymentApproved, notify.TypePaymentRefunded}
	}
	set := make(map[string]bool, len(types))
	for _, t := range types {
		set[t] = true
	}
	return &Notifier{client: client, sink: sink, types: set, log: log}, nil
}

// Handle implements notify.Handler.
//
//   - a type the customer is not told about: acknowledged, nothing fetched;
//   - source down, timeout, 5xx: error, so the entry stays pending and is
//     read again first on the next pass;
//   - 404: the payment is gone, there is nothing to tell: acknowledged;
//   - fetched version older than the event's: the read hit a stale copy
//     (a lagging replica, a cache): error, retried until the source catches
//     up, because notifying an older state than the event announced would be
//     wrong;
//   - otherwise notify with the fetched (current) state, flagged superseded
//     when the payment has already moved past the event.
func (n *Notifier) Handle(ctx context.Context, m notify.Message) error {
	if !n.types[m.Event.Type] {
		return nil
	}
	p, err := n.client.Get(ctx, m.Data.PaymentID)
	if errors.Is(err, ErrPaymentGone) {
		n.log.InfoContext(ctx, "payment gone; nothing to notify", "payment", m.Data.PaymentID, "event", m.Event.ID)
		return nil
	}
	if err != nil {
		return fmt.Errorf("event %s: %w", m.Event.ID, err)
	}
	if p.Version < m.Data.Version {
		return fmt.Errorf("fetched payment %s at version %d, older than event version %d", p.ID, p.Version, m.Data.Version)
	}
	note := Notification{
		EventID:      m.Event.ID,
		EventType:    m.Event.Type,
		EventVersion: m.Data.Version,
		Payment:      p,
		Superseded:   p.Version > m.Data.Version,
	}
	if err := n.sink.Notify(ctx, note); err != nil {
		return fmt.Errorf("notify event %s: %w", m.Event.ID, err)
	}
	return nil
}
