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

// Console keeps the web console's sessions and portal links (docs/console.md,
// docs/security.md) in the database, so a session survives a restart and
// works on every replica. Tokens and CSRF tokens are stored only as hashes:
// the caller hashes them.
type Console interface {
	// CreateConsoleSession stores a session and drops the expired ones. Its
	// ExpiresAt is cut to its EndsAt.
	CreateConsoleSession(ctx context.Context, s ConsoleSession) error
	// TouchConsoleSession returns the session with this token hash when it
	// has not expired, and moves its expiry to now+idle, never past its
	// EndsAt (ENOTFOUND when it is unknown, idle too long or past its
	// EndsAt).
	TouchConsoleSession(ctx context.Context, hash string, idle time.Duration) (ConsoleSession, error)
	DeleteConsoleSession(ctx context.Context, hash string) error

	// CreatePortalLink stores a link (ENOTFOUND when the tenant does not
	// exist) and drops the expired ones. GetPortalLink returns it whatever
	// its state: the caller decides what a used, expired or revoked link
	// opens (nothing).
	CreatePortalLink(ctx context.Context, l PortalLink) error
	GetPortalLink(ctx context.Context, hash string) (PortalLink, error)
	// OpenPortalLink spends a live link and stores the session it opens,
	// in one transaction: s becomes a SessionPortal of the link's tenant
	// and id, ending at the link's expiry at the latest. It returns the
	// link as found. ENOTFOUND when the hash is unknown, and when the link
	// was used (PortalLinkUsed), revoked or has expired, with the link, so
	// the caller can say which; nothing is written then.
	OpenPortalLink(ctx context.Context, hash string, s ConsoleSession) (PortalLink, error)
	// ListPortalLinks lists a tenant's links that are neither revoked nor
	// expired (used ones too: their session may live), by id.
	ListPortalLinks(ctx context.Context, p ListPortalLinksParams) ([]PortalLink, error)
	// RevokePortalLink revokes a tenant's live link by id and ends the
	// session it opened, in one transaction; ENOTFOUND when the tenant has
	// no such link, or it is revoked or expired already.
	RevokePortalLink(ctx context.Context, tenantID, id string) error
}

// SessionKind is what opened a console session, and so what is checked
// again on every use.
type SessionKind string

const (
	// SessionAdmin was opened with the admin token: AuthHash is the
	// token's HashToken, and the session lasts only while the admin token
	// hashes the same (a restart with another token ends it).
	SessionAdmin SessionKind = "admin"
	// SessionKey was opened with a tenant API key (KeyID): deleting the
	// key ends it.
	SessionKey SessionKind = "key"
	// SessionPortal was opened by a portal link (LinkID): it ends at the
	// link's expiry at the latest, and when the link is revoked.
	SessionPortal SessionKind = "portal"
	// SessionJWT was opened with a JWT that Lerian's access manager
	// authorized (docs/lerian-platform.md): AuthHash is the JWT's HashToken,
	// EndsAt its exp at the latest, TenantID its tenantId (empty: an
	// operator).
	SessionJWT SessionKind = "jwt"
)

// ConsoleSession is one signed-in browser.
type ConsoleSession struct {
	TokenHash string
	Kind      SessionKind
	// TenantID is the one tenant the session acts on; empty for the admin.
	TenantID string
	// KeyID is the API key signed in with (SessionKey): deleting the key
	// ends the session.
	KeyID string
	// AuthHash is the hash of the credential that opened the session, when
	// the session must end once that credential is no longer accepted
	// (SessionAdmin: the admin token's HashToken).
	AuthHash string
	// LinkID is the portal link that opened the session (SessionPortal).
	LinkID string
	// Subject is the access manager's subject of the JWT that opened the
	// session (SessionJWT): who the session's writes are marked as.
	Subject string
	// SealedAuth is the JWT that opened a SessionJWT, sealed by the console
	// under a key derived from the session's cookie token, which the store
	// never sees: the console opens it on each use to have the access
	// manager authorize the session again. Empty for other kinds.
	SealedAuth []byte
	// CSRFHash is the HashToken of the session's CSRF token, never the
	// token itself.
	CSRFHash   string
	CreatedAt  time.Time
	LastUsedAt time.Time
	// ExpiresAt is the idle expiry, moved by each use, never past EndsAt.
	ExpiresAt time.Time
	// EndsAt is the absolute end, whatever the use: sign-in plus the
	// maximum session age, or a portal link's expiry when sooner.
	EndsAt time.Time
}

// PortalLink opens one one-tenant session, once, until it expires or is
// revoked.
type PortalLink struct {
	ID        string
	TokenHash string
	TenantID  string
	CreatedAt time.Time
	ExpiresAt time.Time
	// UsedAt is when the link was opened (spent); nil until then.
	UsedAt  *time.Time
	Revoked bool
}

// ListPortalLinksParams pages a tenant's portal links by id.
type ListPortalLinksParams struct {
	TenantID string
	After    string // list ids greater than this
	Limit    int
}

// PortalLinkIDPrefix prefixes portal link ids (hub.NewID).
const PortalLinkIDPrefix = "pl"

// ConsoleSessionNotFound is the answer for an unknown or expired session.
func ConsoleSessionNotFound() error {
	return hub.Errorf(hub.ENOTFOUND, "console session not found or expired")
}

// PortalLinkNotFound is the answer for an unknown portal link.
func PortalLinkNotFound() error { return hub.Errorf(hub.ENOTFOUND, "portal link not found") }

// PortalLinkUsed is the answer for a portal link opened before.
func PortalLinkUsed() error { return hub.Errorf(hub.ENOTFOUND, "link already used") }

// PortalSession is s made the session link opens, at now: a SessionPortal
// of the link's tenant and id, ending at the link's expiry at the latest.
// The drivers' OpenPortalLink use it.
func PortalSession(s ConsoleSession, l PortalLink) ConsoleSession {
	s.Kind, s.TenantID, s.LinkID, s.KeyID, s.AuthHash = SessionPortal, l.TenantID, l.ID, "", ""
	if s.EndsAt.IsZero() || l.ExpiresAt.Before(s.EndsAt) {
		s.EndsAt = l.ExpiresAt
	}
	return s.Capped()
}

// Capped is s with its idle expiry cut to its absolute end.
func (s ConsoleSession) Capped() ConsoleSession {
	if !s.EndsAt.IsZero() && s.EndsAt.Before(s.ExpiresAt) {
		s.ExpiresAt = s.EndsAt
	}
	return s
}

// Live reports whether the link may still be opened at now.
func (l PortalLink) Live(now time.Time) bool {
	return l.UsedAt == nil && !l.Revoked && now.Before(l.ExpiresAt)
}

// HashToken is how console session, CSRF and portal-link tokens are
// stored: their SHA-256, hex. A token is 32 random bytes (or derived from
// one), so no salt or stretching is needed.
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
