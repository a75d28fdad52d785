// Package apikey makes and reads tenant API keys: "shk_<id>.<secret>", of
// which only the SHA-256 of the secret is stored.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

const prefix = "shk_"

// New generates a key for tenant: the record to store and the key to show
// once. The id finds the row; the secret is compared (as a hash) in constant
// time.
func New(tenantID string, now time.Time) (hub.APIKey, string) {
	var id [8]byte
	var secret [32]byte
	rand.Read(id[:])
	rand.Read(secret[:])
	k := hub.APIKey{ID: "key_" + hex.EncodeToString(id[:]), TenantID: tenantID, CreatedAt: now}
	s := base64.RawURLEncoding.EncodeToString(secret[:])
	sum := sha256.Sum256([]byte(s))
	k.Hash = sum[:]
	return k, prefix + k.ID + "." + s
}

// Parse splits a presented key into the id of its row and its secret.
func Parse(key string) (id, secret string, ok bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", "", false
	}
	id, secret, ok = strings.Cut(rest, ".")
	hexID, isKey := strings.CutPrefix(id, "key_")
	return id, secret, ok && isKey && only(hexID, "0123456789abcdef") && hexID != "" && len(hexID) <= 64 &&
		secret != "" && len(secret) <= 256 && only(secret, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
}

// only reports whether every byte of s is one of chars: a key that is not
// of the form New makes is refused before it reaches a database.
func only(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(chars, s[i]) < 0 {
			return false
		}
	}
	return true
}
