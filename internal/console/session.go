package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

const (
	sessionCookie = "hub_console"
	// preCookie carries the CSRF token of the forms shown before a session
	// exists (sign-in, a portal link's page): double submit.
	preCookie = "hub_console_pre"
	// tenantCookie is the tenant an admin acts on; it grants nothing (the
	// admin may act on every tenant). It outlives the session
	// (tenantCookieAge), so the next visit starts on the tenant used last.
	tenantCookie = "hub_console_tenant"
	csrfField    = "csrf"
)

// tenantCookieAge is how long the console remembers the tenant an admin
// used last: 30 days, in seconds.
const tenantCookieAge = 30 * 24 * 60 * 60

// session is a signed-in browser: who it acts as, and its CSRF token.
type session struct {
	store.ConsoleSession
	Principal api.Principal
	// Tenant is the tenant pages act on: the session's own, or the one an
	// admin chose ("" until then).
	Tenant string
	// CSRF is the token the session's forms carry. It is derived from the
	// session's cookie, which only the browser holds; the store keeps its
	// hash (CSRFHash), never the token.
	CSRF string
	// resolved is the kind of resource whose link chose Tenant on this
	// request (tenantOf); "" when the session's choice stands.
	resolved string
}

func (s *session) Admin() bool { return s.Principal.Admin }

// csrfToken is the CSRF token of the session whose cookie is token: an
// HMAC of a fixed label under the session token, so it is known to the
// browser (in the forms) and to the hub (from the cookie) and stored
// nowhere in clear.
func csrfToken(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("streaming-hub console csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// secure: the cookie is Secure when the request came over TLS or through a
// proxy that says it did.
func secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",") // the first proxy's
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
}

// load returns the request's session, moving its idle expiry, or nil. A
// session whose credential is no longer accepted (the admin token changed,
// the key was deleted) is ended.
func (c *Console) load(r *http.Request) *session {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" || !hub.PlainText(ck.Value) || len(ck.Value) > 256 {
		return nil
	}
	hash := store.HashToken(ck.Value)
	cs, err := c.deps.Store.TouchConsoleSession(r.Context(), hash, c.deps.IdleTimeout)
	if err != nil {
		if hub.ErrorCode(err) != hub.ENOTFOUND {
			c.deps.Logger.Error("loading a console session failed", "err", err)
		}
		return nil
	}
	p, ok := c.recheck(r, cs, ck.Value)
	if !ok {
		return nil
	}
	s := &session{ConsoleSession: cs, Principal: p, Tenant: cs.TenantID, CSRF: csrfToken(ck.Value)}
	if s.Admin() {
		if t, err := r.Cookie(tenantCookie); err == nil && hub.ValidateTenantID(t.Value) == nil {
			s.Tenant = t.Value
		}
		if served := c.deps.API.ServedTenant(); served != "" {
			// A single-tenant hub's operator acts on its one tenant,
			// without choosing it and whatever a cookie says: there is
			// no other (docs/security.md#one-tenant-everywhere).
			s.Tenant = served
		}
		if s.Tenant == "" {
			// An admin of a hub with one tenant acts on it without
			// choosing it; with more, the tenant cookie keeps the one
			// chosen last.
			if ts, err := c.deps.Store.ListTenants(r.Context(), store.ListTenantsParams{Limit: 2}); err == nil && len(ts) == 1 {
				s.Tenant = ts[0].ID
			}
		}
	}
	return s
}

// recheck checks again, on every use, what opened the session (whose
// cookie is token), and returns who it acts as. A session whose credential
// is gone is deleted; a store failure only refuses this request.
func (c *Console) recheck(r *http.Request, cs store.ConsoleSession, token string) (api.Principal, bool) {
	end := func() (api.Principal, bool) {
		c.deps.Store.DeleteConsoleSession(r.Context(), cs.TokenHash)
		return api.Principal{}, false
	}
	switch cs.Kind {
	case store.SessionAdmin:
		// Opened with the admin token: it lasts while that is still the
		// admin token (a restart with another one ends it).
		current := c.deps.API.AdminTokenHash()
		if current == "" || subtle.ConstantTimeCompare([]byte(cs.AuthHash), []byte(current)) != 1 {
			return end()
		}
		return api.Principal{Admin: true}, true
	case store.SessionKey:
		k, err := c.deps.Store.GetAPIKey(r.Context(), cs.KeyID)
		if hub.ErrorCode(err) == hub.ENOTFOUND || err == nil && k.TenantID != cs.TenantID {
			return end()
		}
		if err != nil {
			c.deps.Logger.Error("checking a console session's key failed", "err", err)
			return api.Principal{}, false
		}
		return api.Principal{TenantID: cs.TenantID, KeyID: cs.KeyID}, true
	case store.SessionJWT:
		// It ends at the token's exp (its EndsAt, which the store has
		// seen to); a tenant's session ends with its tenant's roster entry.
		// Its token, opened with the cookie's key, has each page and form
		// authorized by the access manager again (authorized, and the
		// API for each call); a session without one (opened before it was
		// kept) ends.
		if cs.AuthHash == "" || !cs.EndsAt.After(c.now()) {
			return end()
		}
		jwt, err := openJWT(token, cs.TokenHash, cs.SealedAuth)
		if err != nil || subtle.ConstantTimeCompare([]byte(store.HashToken(jwt)), []byte(cs.AuthHash)) != 1 {
			return end()
		}
		if cs.TenantID == "" {
			return c.deps.API.SessionPrincipal(r, api.Principal{Admin: true, Subject: cs.Subject, TokenHash: cs.AuthHash, Expires: cs.EndsAt}, jwt), true
		}
		t, err := c.deps.Store.GetTenant(r.Context(), cs.TenantID)
		if hub.ErrorCode(err) == hub.ENOTFOUND || err == nil && t.Status != hub.TenantActive {
			return end()
		}
		if err != nil {
			c.deps.Logger.Error("checking a console session's tenant failed", "err", err)
			return api.Principal{}, false
		}
		return c.deps.API.SessionPrincipal(r, api.Principal{TenantID: cs.TenantID, Subject: cs.Subject, TokenHash: cs.AuthHash, Expires: cs.EndsAt}, jwt), true
	case store.SessionPortal:
		// It ends at the link's expiry (its EndsAt) and when the link is
		// revoked (which deletes it): the store has seen to both.
		if cs.TenantID == "" || cs.LinkID == "" {
			return end()
		}
		return api.Principal{TenantID: cs.TenantID, LinkID: cs.LinkID}, true
	default:
		// A kind this binary does not know (a newer one wrote it) opens
		// nothing here.
		return api.Principal{}, false
	}
}

// newSession is a fresh session token and its record at now, of no kind
// yet: it ends after the idle timeout or at the maximum age.
func (c *Console) newSession(now time.Time) (string, store.ConsoleSession) {
	token := store.NewToken()
	return token, store.ConsoleSession{TokenHash: store.HashToken(token), CSRFHash: store.HashToken(csrfToken(token)),
		CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(c.deps.IdleTimeout), EndsAt: now.Add(c.deps.SessionMaxAge)}
}

// signedIn sets the new session's cookie, ending the session the browser
// had before (signing in again, or opening a portal link after asking).
func (c *Console) signedIn(w http.ResponseWriter, r *http.Request, token string) {
	if old, err := r.Cookie(sessionCookie); err == nil && old.Value != "" {
		c.deps.Store.DeleteConsoleSession(r.Context(), store.HashToken(old.Value))
	}
	c.setCookie(w, r, sessionCookie, token, 0)
	c.setCookie(w, r, preCookie, "", -1)
}

// start creates a session for p, signed in with credential (a token or
// key), and sets its cookie.
func (c *Console) start(w http.ResponseWriter, r *http.Request, p api.Principal, credential string) error {
	token, cs := c.newSession(c.now())
	switch {
	case p.TokenHash != "":
		// A JWT: the session ends at its exp at the latest, and keeps the
		// token sealed to have the access manager asked again
		// (docs/lerian-platform.md#lerians-access-manager).
		if store.HashToken(credential) != p.TokenHash {
			return hub.Errorf(hub.EINTERNAL, "console: a JWT sign-in whose token is not the one authorized")
		}
		sealed, err := sealJWT(token, cs.TokenHash, credential)
		if err != nil {
			return err
		}
		cs.Kind, cs.TenantID, cs.AuthHash, cs.Subject, cs.SealedAuth = store.SessionJWT, p.TenantID, p.TokenHash, p.Subject, sealed
		if p.Expires.Before(cs.EndsAt) {
			cs.EndsAt = p.Expires
		}
		if cs.EndsAt.Before(cs.ExpiresAt) {
			cs.ExpiresAt = cs.EndsAt
		}
	case p.Admin:
		cs.Kind, cs.AuthHash = store.SessionAdmin, c.deps.API.AdminTokenHash()
	case p.KeyID != "":
		cs.Kind, cs.TenantID, cs.KeyID = store.SessionKey, p.TenantID, p.KeyID
	default:
		return hub.Errorf(hub.EINTERNAL, "console: a sign-in with neither the admin token nor a key")
	}
	if err := c.deps.Store.CreateConsoleSession(r.Context(), cs); err != nil {
		return err
	}
	c.signedIn(w, r, token)
	return nil
}

// sameOrigin refuses cross-site writes: a browser's Sec-Fetch-Site, or an
// Origin that is not this site's (scheme, host and port).
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		return originOf(r) != "" && strings.EqualFold(normalOrigin(o), originOf(r))
	}
	return true
}

// originOf is the origin the browser sees this hub at: https when the
// request came over TLS or a proxy says so (X-Forwarded-Proto), else
// http; the Host it asked for, its port made explicit.
func originOf(r *http.Request) string {
	scheme := "http"
	if secure(r) {
		scheme = "https"
	}
	return normalOrigin(scheme + "://" + r.Host)
}

// normalOrigin writes an origin as scheme://host:port with the scheme's
// default port when none is given (http 80, https 443); "" when it is not
// an origin.
func normalOrigin(o string) string {
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case port != "":
	case scheme == "http":
		port = "80"
	case scheme == "https":
		port = "443"
	default:
		return ""
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// checkCSRF: the form's token must hash to wantHash, and the request must
// not come from another site.
func checkCSRF(r *http.Request, wantHash string) bool {
	if !sameOrigin(r) || wantHash == "" {
		return false
	}
	got := r.PostFormValue(csrfField)
	if got == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(store.HashToken(got)), []byte(wantHash)) == 1
}

// preToken is the browser's pre-session CSRF token (set when it has none):
// the forms shown before a session carry it, and their POST must send it
// back in the field and the cookie.
func (c *Console) preToken(w http.ResponseWriter, r *http.Request) string {
	if ck, err := r.Cookie(preCookie); err == nil && len(ck.Value) == 43 && hub.PlainText(ck.Value) {
		return ck.Value
	}
	pre := store.NewToken()
	c.setCookie(w, r, preCookie, pre, 0)
	return pre
}

// checkPre checks a form shown before a session: its token and its cookie.
func checkPre(r *http.Request) bool {
	pre, err := r.Cookie(preCookie)
	return err == nil && pre.Value != "" && checkCSRF(r, store.HashToken(pre.Value))
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if s := c.load(r); s != nil {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	c.showSignIn(w, r, http.StatusOK, "")
}

func (c *Console) showSignIn(w http.ResponseWriter, r *http.Request, status int, msg string) {
	c.render(w, r, nil, status, "signin", map[string]any{"CSRF": c.preToken(w, r), "Error": msg})
}

// signIn authenticates the token by the API's rules (throttle included).
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !checkPre(r) {
		c.renderError(w, r, nil, http.StatusForbidden, "This form expired or came from another site. Reload the sign-in page and try again.")
		return
	}
	credential := strings.TrimSpace(r.PostFormValue("token"))
	p, err := c.deps.API.SignIn(r, credential)
	if err != nil {
		switch hub.ErrorCode(err) {
		case hub.EUNAUTHORIZED:
			c.showSignIn(w, r, http.StatusUnauthorized, "That token is not the admin token or a valid API key.")
		case hub.ERATELIMITED:
			w.Header().Set("Retry-After", "60")
			c.showSignIn(w, r, http.StatusTooManyRequests, "Too many failed sign-ins: wait a minute and try again.")
		case hub.EFORBIDDEN:
			c.showSignIn(w, r, http.StatusForbidden, hub.ErrorMessage(err))
		case hub.ENOTFOUND:
			c.showSignIn(w, r, http.StatusForbidden, "The access manager does not know this token.")
		case api.CodeAuthUnavailable:
			c.showSignIn(w, r, http.StatusServiceUnavailable, "The access manager could not be asked: try again in a moment.")
		default:
			c.internalError(w, r, nil, err)
		}
		return
	}
	if err := c.start(w, r, p, credential); err != nil {
		c.internalError(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request, s *session) {
	c.deps.Store.DeleteConsoleSession(r.Context(), s.TokenHash)
	c.setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
}

// Portal links (docs/console.md, docs/security.md). A GET shows what the link
// opens and asks; only the POST of that page (same origin, its double-submit
// token) spends the link and starts the session, so a link opened by another
// site, or in a browser signed in as someone else, replaces nothing by
// itself.
const (
	linkGone = "This portal link is unknown, expired or revoked. Ask for a new one."
	linkUsed = "Portal link already used: a link opens one session, once. Ask for a new one."
)

// portalToken is the request's link token, or "" when it cannot be one.
func portalToken(r *http.Request) string {
	token := r.PathValue("token")
	if token == "" || !hub.PlainText(token) || len(token) > 256 {
		return ""
	}
	return token
}

// linkRefused shows why a link opens nothing: 404 either way.
func (c *Console) linkRefused(w http.ResponseWriter, r *http.Request, l store.PortalLink) {
	msg := linkGone
	if l.UsedAt != nil {
		msg = linkUsed
	}
	c.renderError(w, r, nil, http.StatusNotFound, msg)
}

// portalPage asks before a live link opens a session.
func (c *Console) portalPage(w http.ResponseWriter, r *http.Request) {
	token := portalToken(r)
	if token == "" {
		c.linkRefused(w, r, store.PortalLink{})
		return
	}
	l, err := c.deps.Store.GetPortalLink(r.Context(), store.HashToken(token))
	if err != nil && hub.ErrorCode(err) != hub.ENOTFOUND {
		c.internalError(w, r, nil, err)
		return
	}
	if err != nil || !l.Live(c.now()) {
		c.linkRefused(w, r, l)
		return
	}
	var current string
	if s := c.load(r); s != nil {
		current = "the admin"
		if !s.Admin() {
			current = "tenant " + s.TenantID
		}
	}
	c.render(w, r, nil, http.StatusOK, "portal", map[string]any{
		"CSRF": c.preToken(w, r), "Action": api.PortalPath + token, "Tenant": l.TenantID,
		"Expires": l.ExpiresAt.Format(time.RFC3339), "Current": current,
	})
}

// openPortal spends a live link and starts its one-tenant session, ending
// at the link's expiry at the latest.
func (c *Console) openPortal(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !checkPre(r) {
		c.renderError(w, r, nil, http.StatusForbidden, "This form expired or came from another site. Open the portal link again.")
		return
	}
	token := portalToken(r)
	if token == "" {
		c.linkRefused(w, r, store.PortalLink{})
		return
	}
	sessionToken, cs := c.newSession(c.now())
	l, err := c.deps.Store.OpenPortalLink(r.Context(), store.HashToken(token), cs)
	if hub.ErrorCode(err) == hub.ENOTFOUND {
		c.linkRefused(w, r, l)
		return
	}
	if err != nil {
		c.internalError(w, r, nil, err)
		return
	}
	c.signedIn(w, r, sessionToken)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// page registers a GET handler that needs a session.
func (c *Console) page(pattern string, fn func(http.ResponseWriter, *http.Request, *session)) {
	c.patterns = append(c.patterns, pattern)
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s := c.load(r)
		if s == nil {
			http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
			return
		}
		if !c.authorized(w, r, s, pattern) {
			return
		}
		fn(w, r, s)
	})
}

// action registers a POST handler that needs a session and its CSRF token.
func (c *Console) action(pattern string, fn func(http.ResponseWriter, *http.Request, *session)) {
	c.patterns = append(c.patterns, pattern)
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
		s := c.load(r)
		if s == nil {
			if !sameOrigin(r) {
				c.renderError(w, r, nil, http.StatusForbidden, "Refused: this form came from another site.")
				return
			}
			http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
			return
		}
		if !checkCSRF(r, s.CSRFHash) {
			c.renderError(w, r, s, http.StatusForbidden, "Refused: this form's security token is missing or wrong, or it came from another site. Reload the page and try again.")
			return
		}
		// Signing out is always allowed.
		if pattern != signOutPattern && !c.authorized(w, r, s, pattern) {
			return
		}
		fn(w, r, s)
	})
}

// actAs: the admin chooses the tenant the tenant pages show.
func (c *Console) actAs(w http.ResponseWriter, r *http.Request, s *session) {
	if !s.Admin() {
		c.renderError(w, r, s, http.StatusForbidden, "Only the admin chooses a tenant.")
		return
	}
	id := r.PostFormValue("tenant")
	if hub.ValidateTenantID(id) != nil {
		c.renderError(w, r, s, http.StatusBadRequest, "tenant: not a tenant id")
		return
	}
	if served := c.deps.API.ServedTenant(); served != "" && id != served {
		c.renderError(w, r, s, http.StatusForbidden, "This hub serves tenant "+served+" only.")
		return
	}
	c.setCookie(w, r, tenantCookie, id, tenantCookieAge)
	back := r.PostFormValue("back")
	if !strings.HasPrefix(back, Prefix) || strings.HasPrefix(back, "//") || strings.Contains(back, "\\") {
		back = Prefix
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
