package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// testConsole: console sessions expire after their idle time, each use
// moves the expiry but never past the session's absolute end; they keep
// what opened them. Portal links open one session, once, ending at the
// link's expiry; revoking a link ends its session; links are listed by
// tenant and id.
func testConsole(t *testing.T, open Opener) {
	t.Run("SessionIdleExpiry", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		now := e.clock.Now().UTC().Truncate(time.Microsecond)
		idle := 12 * time.Hour
		s := store.ConsoleSession{TokenHash: "h1", Kind: store.SessionAdmin, AuthHash: "a1", CSRFHash: "c1",
			CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(idle), EndsAt: now.Add(1000 * time.Hour)}
		if err := e.store.CreateConsoleSession(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(11 * time.Hour)
		got, err := e.store.TouchConsoleSession(e.ctx, "h1", idle)
		if err != nil {
			t.Fatalf("touch after 11h: %v", err)
		}
		if got.CSRFHash != "c1" || got.AuthHash != "a1" || got.Kind != store.SessionAdmin || got.TenantID != "" ||
			!got.ExpiresAt.Equal(now.Add(11*time.Hour+idle)) || !got.EndsAt.Equal(s.EndsAt) || !got.CreatedAt.Equal(now) {
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
	t.Run("SessionAbsoluteEnd", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		now := e.clock.Now().UTC().Truncate(time.Microsecond)
		idle := 12 * time.Hour
		ends := now.Add(12 * time.Hour)
		// An idle expiry past the end is cut to it.
		s := store.ConsoleSession{TokenHash: "h3", Kind: store.SessionAdmin, AuthHash: "a", CSRFHash: "c",
			CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(13 * time.Hour), EndsAt: ends}
		if err := e.store.CreateConsoleSession(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		for _, step := range []time.Duration{4 * time.Hour, 4 * time.Hour, 3*time.Hour + 59*time.Minute} {
			e.clock.Advance(step)
			got, err := e.store.TouchConsoleSession(e.ctx, "h3", idle)
			if err != nil {
				t.Fatalf("used at %v: %v", e.clock.Now().Sub(now), err)
			}
			if !got.ExpiresAt.Equal(ends) || !got.EndsAt.Equal(ends) {
				t.Fatalf("idle expiry moved past the end: %+v", got)
			}
		}
		e.clock.Advance(time.Minute) // 12h since sign-in, used a minute ago
		if _, err := e.store.TouchConsoleSession(e.ctx, "h3", idle); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("touch at the absolute end: %v, want ENOTFOUND", err)
		}
	})
	t.Run("SessionDelete", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", hub.TenantActive)
		now := e.clock.Now()
		s := store.ConsoleSession{TokenHash: "h2", Kind: store.SessionKey, TenantID: "acme", KeyID: "k1", CSRFHash: "c",
			CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(time.Hour), EndsAt: now.Add(12 * time.Hour)}
		if err := e.store.CreateConsoleSession(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		got, err := e.store.TouchConsoleSession(e.ctx, "h2", time.Hour)
		if err != nil || got.TenantID != "acme" || got.KeyID != "k1" || got.Kind != store.SessionKey {
			t.Fatalf("session = %+v, %v", got, err)
		}
		if err := e.store.DeleteConsoleSession(e.ctx, "h2"); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.TouchConsoleSession(e.ctx, "h2", time.Hour); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("deleted session: %v", err)
		}
	})
	t.Run("SessionSubject", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		now := e.clock.Now()
		s := store.ConsoleSession{TokenHash: "hj", Kind: store.SessionJWT, AuthHash: "jwt-hash", Subject: "lerian/alice", CSRFHash: "c",
			SealedAuth: []byte{0, 1, 2, 0xff}, CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(time.Hour), EndsAt: now.Add(time.Hour)}
		if err := e.store.CreateConsoleSession(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		if got, err := e.store.TouchConsoleSession(e.ctx, "hj", time.Hour); err != nil || got.Subject != "lerian/alice" || got.Kind != store.SessionJWT ||
			string(got.SealedAuth) != "\x00\x01\x02\xff" {
			t.Fatalf("a JWT session keeps its token's subject and its sealed token: %+v, %v", got, err)
		}
	})
	t.Run("PortalLinks", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", hub.TenantActive)
		now := e.clock.Now().UTC().Truncate(time.Microsecond)
		l := store.PortalLink{ID: hub.NewID(store.PortalLinkIDPrefix, now), TokenHash: "p1", TenantID: "acme", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := e.store.CreatePortalLink(e.ctx, l); err != nil {
			t.Fatal(err)
		}
		got, err := e.store.GetPortalLink(e.ctx, "p1")
		if err != nil || got.ID != l.ID || got.TenantID != "acme" || !got.ExpiresAt.Equal(l.ExpiresAt) || got.Revoked || got.UsedAt != nil {
			t.Fatalf("link = %+v, %v", got, err)
		}
		if _, err := e.store.GetPortalLink(e.ctx, "nope"); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("unknown link: %v", err)
		}
		bad := store.PortalLink{ID: hub.NewID(store.PortalLinkIDPrefix, now), TokenHash: "p2", TenantID: "ghost", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := e.store.CreatePortalLink(e.ctx, bad); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("link for an unknown tenant: %v, want ENOTFOUND", err)
		}
	})
	t.Run("PortalLinkOpensOnceUntilItsExpiry", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", hub.TenantActive)
		now := e.clock.Now().UTC().Truncate(time.Microsecond)
		l := store.PortalLink{ID: hub.NewID(store.PortalLinkIDPrefix, now), TokenHash: "p1", TenantID: "acme", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := e.store.CreatePortalLink(e.ctx, l); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(10 * time.Minute)
		at := e.clock.Now().UTC().Truncate(time.Microsecond)
		// What the caller asks is cut to the link: its tenant, its id, its
		// expiry; no key, no admin hash.
		s := store.ConsoleSession{TokenHash: "s1", Kind: store.SessionAdmin, TenantID: "globex", KeyID: "k", AuthHash: "a", CSRFHash: "c",
			CreatedAt: at, LastUsedAt: at, ExpiresAt: at.Add(12 * time.Hour), EndsAt: at.Add(12 * time.Hour)}
		opened, err := e.store.OpenPortalLink(e.ctx, "p1", s)
		if err != nil || opened.ID != l.ID || opened.TenantID != "acme" || opened.UsedAt == nil || !opened.UsedAt.Equal(at) {
			t.Fatalf("open = %+v, %v", opened, err)
		}
		got, err := e.store.TouchConsoleSession(e.ctx, "s1", 12*time.Hour)
		if err != nil || got.Kind != store.SessionPortal || got.TenantID != "acme" || got.LinkID != l.ID || got.KeyID != "" || got.AuthHash != "" ||
			got.CSRFHash != "c" || !got.EndsAt.Equal(l.ExpiresAt) || !got.ExpiresAt.Equal(l.ExpiresAt) {
			t.Fatalf("portal session = %+v, %v", got, err)
		}
		if got, _ := e.store.GetPortalLink(e.ctx, "p1"); got.UsedAt == nil || !got.UsedAt.Equal(at) {
			t.Fatalf("opened link not spent: %+v", got)
		}
		// A second open is refused, says why, and stores nothing.
		s.TokenHash = "s2"
		again, err := e.store.OpenPortalLink(e.ctx, "p1", s)
		if hub.ErrorCode(err) != hub.ENOTFOUND || !strings.Contains(hub.ErrorMessage(err), "already used") || again.UsedAt == nil {
			t.Fatalf("second open: %+v, %v; want ENOTFOUND link already used", again, err)
		}
		if _, err := e.store.TouchConsoleSession(e.ctx, "s2", time.Hour); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("a second open stored a session: %v", err)
		}
		if _, err := e.store.OpenPortalLink(e.ctx, "nope", s); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("unknown link: %v", err)
		}
		// The session ends with the link, whatever its use.
		e.clock.Advance(49 * time.Minute)
		if _, err := e.store.TouchConsoleSession(e.ctx, "s1", 12*time.Hour); err != nil {
			t.Fatalf("a minute before the link's expiry: %v", err)
		}
		e.clock.Advance(time.Minute)
		if _, err := e.store.TouchConsoleSession(e.ctx, "s1", 12*time.Hour); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("at the link's expiry: %v, want ENOTFOUND", err)
		}

		// An expired link opens nothing and is not spent.
		late := store.PortalLink{ID: hub.NewID(store.PortalLinkIDPrefix, e.clock.Now()), TokenHash: "p3", TenantID: "acme", CreatedAt: e.clock.Now(), ExpiresAt: e.clock.Now().Add(time.Minute)}
		if err := e.store.CreatePortalLink(e.ctx, late); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		s.TokenHash = "s3"
		if got, err := e.store.OpenPortalLink(e.ctx, "p3", s); hub.ErrorCode(err) != hub.ENOTFOUND || got.UsedAt != nil {
			t.Fatalf("expired link: %+v, %v", got, err)
		}
		if _, err := e.store.TouchConsoleSession(e.ctx, "s3", time.Hour); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("an expired link stored a session: %v", err)
		}
	})
	t.Run("PortalLinkRevokeEndsItsSession", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", hub.TenantActive)
		e.tenant(t, "globex", hub.TenantActive)
		now := e.clock.Now().UTC().Truncate(time.Microsecond)
		link := func(hash, tenant string) store.PortalLink {
			l := store.PortalLink{ID: hub.NewID(store.PortalLinkIDPrefix, now), TokenHash: hash, TenantID: tenant, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := e.store.CreatePortalLink(e.ctx, l); err != nil {
				t.Fatal(err)
			}
			return l
		}
		used, unused, other := link("p1", "acme"), link("p2", "acme"), link("p3", "globex")
		s := store.ConsoleSession{TokenHash: "s1", CSRFHash: "c", CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(time.Hour), EndsAt: now.Add(time.Hour)}
		if _, err := e.store.OpenPortalLink(e.ctx, "p1", s); err != nil {
			t.Fatal(err)
		}
		admin := store.ConsoleSession{TokenHash: "s-admin", Kind: store.SessionAdmin, AuthHash: "a", CSRFHash: "c", CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(time.Hour), EndsAt: now.Add(time.Hour)}
		if err := e.store.CreateConsoleSession(e.ctx, admin); err != nil {
			t.Fatal(err)
		}

		list, err := e.store.ListPortalLinks(e.ctx, store.ListPortalLinksParams{TenantID: "acme"})
		if err != nil || len(list) != 2 || list[0].ID != used.ID || list[1].ID != unused.ID || list[0].UsedAt == nil || list[1].UsedAt != nil {
			t.Fatalf("acme's links = %+v, %v", list, err)
		}
		page, err := e.store.ListPortalLinks(e.ctx, store.ListPortalLinksParams{TenantID: "acme", After: used.ID, Limit: 1})
		if err != nil || len(page) != 1 || page[0].ID != unused.ID {
			t.Fatalf("acme's links after the first = %+v, %v", page, err)
		}

		// Another tenant's link, or an unknown one, is not found.
		if err := e.store.RevokePortalLink(e.ctx, "acme", other.ID); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("revoking globex's link as acme's: %v", err)
		}
		if err := e.store.RevokePortalLink(e.ctx, "acme", "pl_nope"); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("revoking an unknown link: %v", err)
		}
		if err := e.store.RevokePortalLink(e.ctx, "acme", used.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.TouchConsoleSession(e.ctx, "s1", time.Hour); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("the revoked link's session: %v, want ENOTFOUND", err)
		}
		if _, err := e.store.TouchConsoleSession(e.ctx, "s-admin", time.Hour); err != nil {
			t.Fatalf("another session ended with the link: %v", err)
		}
		if got, _ := e.store.GetPortalLink(e.ctx, "p1"); !got.Revoked {
			t.Fatalf("revoked link = %+v", got)
		}
		if err := e.store.RevokePortalLink(e.ctx, "acme", used.ID); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("revoking twice: %v", err)
		}
		// A revoked link opens nothing.
		if err := e.store.RevokePortalLink(e.ctx, "acme", unused.ID); err != nil {
			t.Fatal(err)
		}
		s.TokenHash = "s2"
		if _, err := e.store.OpenPortalLink(e.ctx, "p2", s); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("revoked link opened: %v", err)
		}
		if _, err := e.store.TouchConsoleSession(e.ctx, "s2", time.Hour); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("a revoked link stored a session: %v", err)
		}
		if list, err := e.store.ListPortalLinks(e.ctx, store.ListPortalLinksParams{TenantID: "acme"}); err != nil || len(list) != 0 {
			t.Fatalf("acme's links after revoking both = %+v, %v", list, err)
		}
		// Expired links are not listed.
		e.clock.Advance(time.Hour)
		if list, err := e.store.ListPortalLinks(e.ctx, store.ListPortalLinksParams{TenantID: "globex"}); err != nil || len(list) != 0 {
			t.Fatalf("globex's links after they expired = %+v, %v", list, err)
		}
		if err := e.store.RevokePortalLink(e.ctx, "globex", other.ID); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("revoking an expired link: %v", err)
		}
	})
}

// CheckConsoleTrustUpgrade is the driver tests' check of migration 13
// (docs/security.md) on a database that held, before it, a session
// "old-session" and an unused, live portal link of tenant acme with this
// token hash: the session has ended, and the link has an id made of its hash
// and is listed, opened and revoked as a new one.
func CheckConsoleTrustUpgrade(t *testing.T, db store.Store, hash string) {
	t.Helper()
	ctx := context.Background()
	if _, err := db.TouchConsoleSession(ctx, "old-session", time.Hour); hub.ErrorCode(err) != hub.ENOTFOUND {
		t.Fatalf("a session of before survived: %v", err)
	}
	links, err := db.ListPortalLinks(ctx, store.ListPortalLinksParams{TenantID: "acme"})
	if err != nil || len(links) != 1 || links[0].ID != "pl_"+hash[:32] || links[0].UsedAt != nil || links[0].TokenHash != hash {
		t.Fatalf("links of before = %+v, %v", links, err)
	}
	now := time.Now()
	s := store.ConsoleSession{TokenHash: "new", CSRFHash: "c", CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(time.Hour), EndsAt: now.Add(time.Hour)}
	if _, err := db.OpenPortalLink(ctx, hash, s); err != nil {
		t.Fatalf("opening a link of before: %v", err)
	}
	if err := db.RevokePortalLink(ctx, "acme", links[0].ID); err != nil {
		t.Fatalf("revoking a link of before: %v", err)
	}
	if _, err := db.TouchConsoleSession(ctx, "new", time.Hour); hub.ErrorCode(err) != hub.ENOTFOUND {
		t.Fatalf("the revoked link's session: %v", err)
	}
}
