package store

import (
	"context"
	"time"
)

// Idempotency keeps the answers of API POSTs made with an Idempotency-Key
// (docs/lerian-platform.md), one row per (principal, key): claimed while its
// request runs, then holding the request's final answer until it expires.
type Idempotency interface {
	// ClaimIdempotencyKey claims c.Principal's c.Key for the request whose
	// hash is c.RequestHash, atomically: two claims of one key never both
	// succeed. It inserts a running row owned by c.Token that expires at
	// now+c.Lock (a request that dies with its process frees its key
	// then), or takes over a row that has expired. When the key is held
	// by a live row it answers that row (running or completed, either
	// request hash) and false.
	ClaimIdempotencyKey(ctx context.Context, c IdempotencyClaim) (IdempotencyRecord, bool, error)
	// CompleteIdempotencyKey stores the answer of the running claim Token
	// (status and body) and makes the row expire ttl after it was
	// claimed. It reports false when the claim was lost (taken over or
	// reaped after its lock expired): nothing is written then.
	CompleteIdempotencyKey(ctx context.Context, principal, key, token string, status int, body []byte, ttl time.Duration) (bool, error)
	// ReleaseIdempotencyKey deletes the row of the running claim Token:
	// the request failed in a way its client may retry with the same key.
	ReleaseIdempotencyKey(ctx context.Context, principal, key, token string) error
	// ReapIdempotencyKeys deletes at most batch expired rows (<= 0 means
	// config.DefaultPruneBatch) and says how many.
	ReapIdempotencyKeys(ctx context.Context, batch int) (int, error)
}

// IdempotencyClaim is one request's claim of an idempotency key.
type IdempotencyClaim struct {
	Principal   string // who asks: the same key of two principals is two keys
	Key         string // the Idempotency-Key header
	RequestHash string // SHA-256 of method, path and body, hex
	Token       string // the claim's owner (NewToken)
	Lock        time.Duration
}

// IdempotencyRecord is a stored key.
type IdempotencyRecord struct {
	Principal, Key, RequestHash string
	// Completed: Status and Body are the request's answer (Body as the
	// caller stored it: sealed). Otherwise the request is still running.
	Completed bool
	Status    int
	Body      []byte
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Idempotency row states.
const (
	IdempotencyRunning   = "running"
	IdempotencyCompleted = "completed"
)
