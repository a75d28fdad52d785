package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Console keeps the web console's sessions and portal links (SPEC 23) in the
// database, so a session survives a restart and works on every replica.
// Tokens are stored only as hashes: the caller hashes them.
type Console interface {
	// CreateConsoleSession stores a session and drops the expired ones.
	CreateConsoleSession(ctx context.Context, s ConsoleSession) error
	// TouchConsoleSession returns the session with this token hash when it
	// has not expired, and moves its expiry to now+idle (ENOTFOUND when it
	// is unknown or expired).
	TouchConsoleSession(ctx context.Context, hash string, idle time.Duration) (ConsoleSession, error)
	DeleteConsoleSession(ctx context.Context, hash string) error

	// CreatePortalLink stores a link (ENOTFOUND when the tenant does not
	// exist). GetPortalLink returns it whatever its state: the caller
	// decides what an expired or revoked link opens (nothing).
	CreatePortalLink(ctx context.Context, l PortalLink) error
	GetPortalLink(ctx context.Context, hash string) (PortalLink, error)
	RevokePortalLink(ctx context.Context, hash string) error
}

// ConsoleSession is one signed-in browser.
type ConsoleSession struct {
	TokenHash string
	// TenantID is the one tenant the session acts on; empty for the admin.
	TenantID string
	// KeyID is the API key signed in with: deleting the key ends the
	// session. Empty for the admin and for portal links.
	KeyID      string
	CSRFSecret string
	CreatedAt  time.Time
	LastUsedAt time.Time
	ExpiresAt  time.Time
}

// PortalLink opens a one-tenant session until it expires or is revoked.
type PortalLink struct {
	TokenHash string
	TenantID  string
	CreatedAt time.Time
	ExpiresAt time.Time
	Revoked   bool
}

// ConsoleSessionNotFound is the answer for an unknown or expired session.
func ConsoleSessionNotFound() error {
	return hub.Errorf(hub.ENOTFOUND, "console session not found or expired")
}

// PortalLinkNotFound is the answer for an unknown portal link.
func PortalLinkNotFound() error { return hub.Errorf(hub.ENOTFOUND, "portal link not found") }

// HashToken is how console session and portal-link tokens are stored: their
// SHA-256, hex. A token is 32 random bytes, so no salt or stretching is
// needed.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewToken returns a fresh random token (256 bits, URL-safe).
func NewToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
