package storetest

import (
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// testConsole: console sessions expire after their idle time and each use
// moves the expiry; portal links keep their tenant, expiry and revocation.
func testConsole(t *testing.T, open Opener) {
	t.Run("SessionIdleExpiry", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		now := e.clock.Now().UTC().Truncate(time.Microsecond)
		idle := 12 * time.Hour
		s := store.ConsoleSession{TokenHash: "h1", TenantID: "", CSRFSecret: "c1", CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(idle)}
		if err := e.store.CreateConsoleSession(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(11 * time.Hour)
		got, err := e.store.TouchConsoleSession(e.ctx, "h1", idle)
		if err != nil {
			t.Fatalf("touch after 11h: %v", err)
		}
		if got.CSRFSecret != "c1" || got.TenantID != "" || !got.ExpiresAt.Equal(now.Add(11*time.Hour+idle)) {
			t.Fatalf("touched session = %+v", got)
		}
		e.clock.Advance(11 * time.Hour) // 22h since sign-in, 11h since use
		if _, err := e.store.TouchConsoleSession(e.ctx, "h1", idle); err != nil {
			t.Fatalf("a used session expired early: %v", err)
		}
		e.clock.Advance(12 * time.Hour)
		if _, err := e.store.TouchConsoleSession(e.ctx, "h1", idle); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("touch after 12h idle: %v, want ENOTFOUND", err)
		}
		if _, err := e.store.TouchConsoleSession(e.ctx, "nope", idle); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("unknown session: %v", err)
		}
	})
	t.Run("SessionDelete", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", hub.TenantActive)
		now := e.clock.Now()
		s := store.ConsoleSession{TokenHash: "h2", TenantID: "acme", KeyID: "k1", CSRFSecret: "c", CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := e.store.CreateConsoleSession(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		got, err := e.store.TouchConsoleSession(e.ctx, "h2", time.Hour)
		if err != nil || got.TenantID != "acme" || got.KeyID != "k1" {
			t.Fatalf("session = %+v, %v", got, err)
		}
		if err := e.store.DeleteConsoleSession(e.ctx, "h2"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.TouchConsoleSession(e.ctx, "h2", time.Hour); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("deleted session: %v", err)
		}
	})
	t.Run("PortalLinks", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", hub.TenantActive)
		now := e.clock.Now().UTC().Truncate(time.Microsecond)
		l := store.PortalLink{TokenHash: "p1", TenantID: "acme", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := e.store.CreatePortalLink(e.ctx, l); err != nil {
			t.Fatal(err)
		}
		got, err := e.store.GetPortalLink(e.ctx, "p1")
		if err != nil || got.TenantID != "acme" || !got.ExpiresAt.Equal(l.ExpiresAt) || got.Revoked {
			t.Fatalf("link = %+v, %v", got, err)
		}
		if err := e.store.RevokePortalLink(e.ctx, "p1"); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.store.GetPortalLink(e.ctx, "p1"); !got.Revoked {
			t.Fatal("revoked link not revoked")
		}
		if _, err := e.store.GetPortalLink(e.ctx, "nope"); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("unknown link: %v", err)
		}
		bad := store.PortalLink{TokenHash: "p2", TenantID: "ghost", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := e.store.CreatePortalLink(e.ctx, bad); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("link for an unknown tenant: %v, want ENOTFOUND", err)
		}
	})
}
