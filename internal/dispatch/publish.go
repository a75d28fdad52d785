package dispatch

import (
	"context"
	"fmt"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/webhook"
)

// publication is an attempt to a broker destination: the message, signed
// and with the headers a webhook attempt gets, and who publishes it.
type publication struct {
	ctx    context.Context
	sender destination.Sender
	target destination.Target
	msg    destination.Message
}

// publication prepares the attempt of c to its broker destination.
func (d *Dispatcher) publication(ctx context.Context, c store.Claimed, sec hub.SubscriptionSecrets, m webhook.Message, now time.Time) (*publication, error) {
	dest := c.Subscription.Destination
	sender := d.cfg.Senders[dest.Type]
	if sender == nil {
		return nil, fmt.Errorf("this hub process cannot deliver to %s destinations", dest.Type)
	}
	msg, err := destination.Compose(sec.Valid(now), m, c.Event.EventType, c.Job.TenantID, now)
	if err != nil {
		return nil, err
	}
	return &publication{ctx: ctx, sender: sender, msg: msg,
		target: destination.Target{Destination: dest, Credentials: sec.Broker}}, nil
}

// sendPublication publishes p and waits for the broker's confirmation,
// within the delivery timeout (the webhook client's).
func (d *Dispatcher) sendPublication(p *publication, a *hub.Attempt) error {
	ctx, cancel := context.WithTimeout(p.ctx, d.cfg.Client.Timeout)
	defer cancel()
	start := time.Now()
	err := p.sender.Send(ctx, p.target, p.msg)
	a.Duration = time.Since(start)
	return err
}
