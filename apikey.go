package hub

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"
)

// APIKey is a tenant's credential for the /v1 API. Only a hash of its secret
// is stored; the key itself is shown once, when created.
type APIKey struct {
	ID        string
	TenantID  string
	Hash      []byte // SHA-256 of the secret part
	CreatedAt time.Time
}

const apiKeyPrefix = "shk_"

// NewAPIKey generates a key for tenant: the record to store and the key to
// show once. The key is "shk_<id>.<secret>": the id finds the row, the secret
// is compared (as a hash) in constant time.
func NewAPIKey(tenantID string, now time.Time) (APIKey, string) {
	var id [8]byte
	var secret [32]byte
	rand.Read(id[:])
	rand.Read(secret[:])
	k := APIKey{ID: "key_" + hex.EncodeToString(id[:]), TenantID: tenantID, CreatedAt: now}
	s := base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(s))
	k.Hash = sum[:]
	return k, apiKeyPrefix + k.ID + "." + s
}

// ParseAPIKey splits a presented key into the id of its row and its secret.
func ParseAPIKey(key string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(key, apiKeyPrefix)
	if !ok {
		return "", "", false
	}
	id, secret, ok = strings.Cut(rest, ".")
	return id, secret, ok && strings.HasPrefix(id, "key_") && secret != ""
}

// Matches compares a presented secret with the stored hash in constant time.
func (k APIKey) Matches(secret string) bool {
	sum := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(sum[:], k.Hash) == 1
}
