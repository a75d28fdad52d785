package api

import (
	"embed"
	"net/http"
	"strings"

	hub "github.com/lerianstudio/streaming-hub"
)

// swaggerPrefix is where STREAMING_HUB_SWAGGER_ENABLED=true serves the API
// reference (docs/api.md, "The API reference in a browser").
const swaggerPrefix = "/swagger/"

// swaggerAssets are the page and its renderer: embedded, self-contained
// (no outside script, style or font; the CSP below forbids any).
//
//go:embed swagger/index.html swagger/app.js swagger/app.css
var swaggerAssets embed.FS

// swaggerFiles are what /swagger serves, by path, with their types.
var swaggerFiles = map[string]struct{ file, ctype string }{
	"/swagger":              {"swagger/index.html", "text/html; charset=utf-8"},
	"/swagger/":             {"swagger/index.html", "text/html; charset=utf-8"},
	"/swagger/app.js":       {"swagger/app.js", "text/javascript; charset=utf-8"},
	"/swagger/app.css":      {"swagger/app.css", "text/css; charset=utf-8"},
	"/swagger/openapi.json": {"", "application/json"},
}

// swaggerRealm is the realm of the Basic challenge a browser answers
// with its sign-in prompt.
const swaggerRealm = `Basic realm="streaming-hub API reference", charset="UTF-8"`

// swagger serves the API reference behind the API's authentication: the
// credentials /v1 takes (the admin token, a tenant API key, or with the
// access manager a JWT it lets sign in to the console), as a bearer token
// or, so that a browser can open the page, as the password of HTTP Basic
// (any user name), which the browser asks for and then sends with each of
// the page's requests. Failures count and throttle as the API's do.
func (s *Server) swagger() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		f, ok := swaggerFiles[r.URL.Path]
		if !ok {
			s.notFound(w)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, errorBody{errorDetail{Code: "method_not_allowed", Message: r.Method + " is not allowed here; allowed: GET, HEAD"}})
			return
		}
		token, ok := swaggerCredential(r)
		if !ok {
			s.countAuthFailure("missing")
			s.swaggerChallenge(w, r, hub.Errorf(hub.EUNAUTHORIZED, "missing credentials: the admin token, an API key or an access-manager token, as a bearer token or as the password of HTTP Basic"))
			return
		}
		if _, err := s.SignIn(r, token); err != nil {
			s.swaggerChallenge(w, r, err)
			return
		}
		body := openapiDoc
		if f.file != "" {
			b, err := swaggerAssets.ReadFile(f.file)
			if err != nil {
				writeError(w, r, s.deps.Logger, err)
				return
			}
			body = b
		}
		h.Set("Content-Type", f.ctype)
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			w.Write(body)
		}
	})
}

// swaggerCredential is the request's bearer token, or the password of its
// HTTP Basic credentials.
func swaggerCredential(r *http.Request) (string, bool) {
	if t, ok := bearer(r); ok {
		return t, true
	}
	if _, pw, ok := r.BasicAuth(); ok && strings.TrimSpace(pw) != "" {
		return strings.TrimSpace(pw), true
	}
	return "", false
}

// swaggerChallenge answers a refusal as the API would, with the Basic
// challenge on a 401 so that a browser asks for the credentials.
func (s *Server) swaggerChallenge(w http.ResponseWriter, r *http.Request, err error) {
	if hub.ErrorCode(err) == hub.EUNAUTHORIZED {
		w.Header().Add("WWW-Authenticate", `Bearer realm="streaming-hub"`)
		w.Header().Add("WWW-Authenticate", swaggerRealm)
	}
	writeError(w, r, s.deps.Logger, err)
}
