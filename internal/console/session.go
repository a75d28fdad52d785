package console

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

const (
	sessionCookie = "hub_console"
	// preCookie carries the sign-in form's CSRF token before a session
	// exists (double submit).
	preCookie = "hub_console_pre"
	// tenantCookie is the tenant an admin acts on; it grants nothing (the
	// admin may act on every tenant).
	tenantCookie = "hub_console_tenant"
	csrfField    = "csrf"
)

// session is a signed-in browser: who it acts as, and its CSRF token.
type session struct {
	store.ConsoleSession
	Principal api.Principal
	// Tenant is the tenant pages act on: the session's own, or the one an
	// admin chose ("" until then).
	Tenant string
}

func (s *session) Admin() bool { return s.Principal.Admin }

// secure: the cookie is Secure when the request came over TLS or through a
// proxy that says it did.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
}

// load returns the request's session, moving its idle expiry, or nil. A
// session of a key that was deleted since, is ended.
func (c *Console) load(r *http.Request) *session {
	ck, err := r.Cookie(sessionCookie)
	if err != nil || ck.Value == "" || !hub.PlainText(ck.Value) {
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
	if cs.KeyID != "" {
		if _, err := c.deps.Store.GetAPIKey(r.Context(), cs.KeyID); err != nil {
			if hub.ErrorCode(err) == hub.ENOTFOUND {
				c.deps.Store.DeleteConsoleSession(r.Context(), hash)
			}
			return nil
		}
	}
	s := &session{ConsoleSession: cs, Principal: api.Principal{Admin: cs.TenantID == "", TenantID: cs.TenantID, KeyID: cs.KeyID}, Tenant: cs.TenantID}
	if s.Admin() {
		if t, err := r.Cookie(tenantCookie); err == nil && hub.ValidateTenantID(t.Value) == nil {
			s.Tenant = t.Value
		}
	}
	return s
}

// start creates a session for p and sets its cookie.
func (c *Console) start(w http.ResponseWriter, r *http.Request, p api.Principal) error {
	token, now := store.NewToken(), c.now()
	cs := store.ConsoleSession{TokenHash: store.HashToken(token), TenantID: p.TenantID, KeyID: p.KeyID,
		CSRFSecret: store.NewToken(), CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(c.deps.IdleTimeout)}
	if p.Admin {
		cs.TenantID, cs.KeyID = "", ""
	}
	if err := c.deps.Store.CreateConsoleSession(r.Context(), cs); err != nil {
		return err
	}
	c.setCookie(w, r, sessionCookie, token, 0)
	c.setCookie(w, r, preCookie, "", -1)
	return nil
}

// sameOrigin refuses cross-site writes: a browser's Sec-Fetch-Site or
// Origin that is not this site's.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || o == "null" || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	return true
}

// checkCSRF: the form's token must equal want, and the request must not
// come from another site.
func checkCSRF(r *http.Request, want string) bool {
	if !sameOrigin(r) || want == "" {
		return false
	}
	got := r.PostFormValue(csrfField)
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if s := c.load(r); s != nil {
		http.Redirect(w, r, Prefix, http.StatusSeeOther)
		return
	}
	c.showSignIn(w, r, http.StatusOK, "")
}

func (c *Console) showSignIn(w http.ResponseWriter, r *http.Request, status int, msg string) {
	pre := store.NewToken()
	c.setCookie(w, r, preCookie, pre, 0)
	c.render(w, r, nil, status, "signin", map[string]any{"CSRF": pre, "Error": msg})
}

// signIn authenticates the token by the API's rules (throttle included).
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	pre, err := r.Cookie(preCookie)
	if err != nil || !checkCSRF(r, pre.Value) {
		c.renderError(w, r, nil, http.StatusForbidden, "This form expired or came from another site. Reload the sign-in page and try again.")
		return
	}
	p, err := c.deps.API.SignIn(r, r.PostFormValue("token"))
	if err != nil {
		switch hub.ErrorCode(err) {
		case hub.EUNAUTHORIZED:
			c.showSignIn(w, r, http.StatusUnauthorized, "That token is not the admin token or a valid API key.")
		case hub.ERATELIMITED:
			w.Header().Set("Retry-After", "60")
			c.showSignIn(w, r, http.StatusTooManyRequests, "Too many failed sign-ins: wait a minute and try again.")
		case hub.EFORBIDDEN:
			c.showSignIn(w, r, http.StatusForbidden, hub.ErrorMessage(err))
		default:
			c.internalError(w, r, nil, err)
		}
		return
	}
	if err := c.start(w, r, p); err != nil {
		c.internalError(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request, s *session) {
	c.deps.Store.DeleteConsoleSession(r.Context(), s.TokenHash)
	c.setCookie(w, r, sessionCookie, "", -1)
	c.setCookie(w, r, tenantCookie, "", -1)
	http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
}

// openPortal turns a live portal link into a one-tenant session. An
// unknown, expired or revoked link opens nothing.
func (c *Console) openPortal(w http.ResponseWriter, r *http.Request) {
	token := r.PathValue("token")
	gone := func() {
		c.renderError(w, r, nil, http.StatusNotFound, "This portal link is unknown, expired or revoked. Ask for a new one.")
	}
	if token == "" || !hub.PlainText(token) || len(token) > 256 {
		gone()
		return
	}
	l, err := c.deps.Store.GetPortalLink(r.Context(), store.HashToken(token))
	if hub.ErrorCode(err) == hub.ENOTFOUND || err == nil && (l.Revoked || !c.now().Before(l.ExpiresAt)) {
		gone()
		return
	}
	if err != nil {
		c.internalError(w, r, nil, err)
		return
	}
	if err := c.start(w, r, api.Principal{TenantID: l.TenantID}); err != nil {
		c.internalError(w, r, nil, err)
		return
	}
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// page registers a GET handler that needs a session.
func (c *Console) page(pattern string, fn func(http.ResponseWriter, *http.Request, *session)) {
	c.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s := c.load(r)
		if s == nil {
			http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
			return
		}
		fn(w, r, s)
	})
}

// action registers a POST handler that needs a session and its CSRF token.
func (c *Console) action(pattern string, fn func(http.ResponseWriter, *http.Request, *session)) {
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
		if !checkCSRF(r, s.CSRFSecret) {
			c.renderError(w, r, s, http.StatusForbidden, "Refused: this form's security token is missing or wrong, or it came from another site. Reload the page and try again.")
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
	c.setCookie(w, r, tenantCookie, id, 0)
	back := r.PostFormValue("back")
	if !strings.HasPrefix(back, Prefix) || strings.HasPrefix(back, "//") || strings.Contains(back, "\\") {
		back = Prefix
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}
