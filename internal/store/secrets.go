package store

import "context"

// Sealed is one subscription's sealed secrets, as KEK rotation sees them.
type Sealed struct {
	SubscriptionID string
	TenantID       string
	Blob           []byte
}

// Secrets is the store's side of KEK rotation (docs/configuration.md): the
// start check that the KEK opens what is stored, and streaming-hub rewrap.
type Secrets interface {
	// ListSealed pages every subscription's sealed secrets (deleted ones
	// too: they still hold credentials) in id order, after After.
	ListSealed(ctx context.Context, after string, limit int) ([]Sealed, error)
	// Reseal replaces a subscription's sealed secrets with blob if they
	// still are old; it reports whether it did. It changes nothing else,
	// so it never conflicts with an API update.
	Reseal(ctx context.Context, subscriptionID string, old, blob []byte) (bool, error)
}
