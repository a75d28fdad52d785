package notify

import "context"

// Message is one stream entry handed to a Handler.
type Message struct {
	ID    string // stream entry id
	Event Event
	Data  Data   // Event.Data, decoded
	Raw   string // the stored event JSON, byte for byte
}

// Handler processes one notification. A nil error acknowledges the entry
// (XACK); any error leaves it pending so the group delivers it again. A
// handler that decides an entry needs nothing (a type it ignores, a resource
// that is gone) returns nil.
type Handler interface {
	Handle(ctx context.Context, m Message) error
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, m Message) error

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, m Message) error { return f(ctx, m) }
