package hub

import (
	"crypto/sha256"
	"crypto/subtle"
	"time"
)

// APIKey is a tenant's credential for the /v1 API. Only a hash of its secret
// is stored; the key itself is shown once, when created.
type APIKey struct {
	ID        string
	TenantID  string
	Hash      []byte // SHA-256 of the secret part
	CreatedAt time.Time
	// LastUsedAt is when it last authenticated a request, to the minute
	// (nil: never).
	LastUsedAt *time.Time
}

// Matches compares a presented secret with the stored hash in constant time.
func (k APIKey) Matches(secret string) bool {
	sum := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(sum[:], k.Hash) == 1
}
