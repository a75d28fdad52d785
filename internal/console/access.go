package console

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"net/http"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/api"
)

// A console session opened with an access-manager JWT is authorized, for
// each page it reads and each form it posts, as the API route behind it
// would be for that JWT: the same resource and action (the API's one
// table, api.RouteAccess), the same decision cache, failing closed
// (docs/lerian-platform.md#lerians-access-manager). Every API call the
// page then makes is asked again by the API itself (api.Server.Call).

// behind names the API route behind each console page and form, by the
// console pattern it is registered under. Sign-out needs no route: it is
// always allowed. A page or form missing here is refused to a JWT
// session; TestBehind_EveryPageHasARoute keeps the table whole.
var behind = map[string]string{
	"POST /console/tenant": "GET /v1/tenants",

	"GET /console/subscriptions":           "GET /v1/subscriptions",
	"GET /console/subscriptions/new":       "GET /v1/event-types",
	"POST /console/subscriptions":          "POST /v1/subscriptions",
	"GET /console/subscriptions/{id}":      "GET /v1/subscriptions/{id}",
	"GET /console/subscriptions/{id}/edit": "GET /v1/subscriptions/{id}",
	"POST /console/subscriptions/{id}":     "PATCH /v1/subscriptions/{id}",

	"GET /console/deliveries":               "GET /v1/deliveries",
	"GET /console/deliveries/{id}":          "GET /v1/deliveries/{id}",
	"POST /console/deliveries/{id}/replay":  "POST /v1/deliveries/{id}/replay",
	"GET /console/events":                   "GET /v1/events",
	"GET /console/events/{id}":              "GET /v1/events/{id}",
	"GET /console/event-types":              "GET /v1/event-types",
	"GET /console/tenants":                  "GET /v1/tenants",
	"POST /console/tenants":                 "POST /v1/tenants",
	"GET /console/tenants/{id}":             "GET /v1/tenants/{id}",
	"GET /console/rejections":               "GET /v1/admin/rejections",
	"POST /console/rejections/{id}/replay":  "POST /v1/admin/rejections/{id}/replay",
	"GET /console/dlq":                      "GET /v1/admin/dlq",
	"GET /console/manifests":                "GET /v1/admin/manifests",
	"GET /console/{$}":                      "", // by who asks: overviewRoute
	"POST /console/tenants/{id}/{op}":       "", // by op: behindOps
	"POST /console/subscriptions/{id}/{op}": "", // by op: behindOps
}

// behindOps are the routes behind the forms whose {op} chooses the route.
var behindOps = map[string]map[string]string{
	"POST /console/tenants/{id}/{op}": {
		"status":      "PATCH /v1/tenants/{id}",
		"keys":        "POST /v1/tenants/{id}/keys",
		"delete-key":  "DELETE /v1/tenants/{id}/keys/{key_id}",
		"portal-link": "POST /v1/tenants/{id}/portal-links",
		"revoke-link": "DELETE /v1/tenants/{id}/portal-links/{link_id}",
	},
	"POST /console/subscriptions/{id}/{op}": {
		"verify":        "POST /v1/subscriptions/{id}/verify",
		"rotate-secret": "POST /v1/subscriptions/{id}/rotate-secret",
		"test":          "POST /v1/subscriptions/{id}/test",
		"enable":        "PATCH /v1/subscriptions/{id}",
		"disable":       "PATCH /v1/subscriptions/{id}",
		"delete":        "DELETE /v1/subscriptions/{id}",
		"replay":        "POST /v1/subscriptions/{id}/replay",
	},
}

// routeBehind is the API route behind the request's console page or form
// (registered under pattern); "" when there is none it may use.
func routeBehind(pattern string, r *http.Request, s *session) string {
	if ops, ok := behindOps[pattern]; ok {
		return ops[r.PathValue("op")]
	}
	if pattern == "GET /console/{$}" {
		// The overview is the console's first page: what sign-in asks.
		if s.Principal.TenantID == "" {
			return "GET /v1/tenants"
		}
		return "GET /v1/subscriptions"
	}
	return behind[pattern]
}

// authorized has a JWT session's page or form authorized by the access
// manager, as the API route behind it; sessions of the hub's own
// credentials pass (the API applies their rules). On a refusal it shows
// why, in the console's layout, and reports false.
func (c *Console) authorized(w http.ResponseWriter, r *http.Request, s *session, pattern string) bool {
	if s.Principal.TokenHash == "" {
		return true
	}
	route := routeBehind(pattern, r, s)
	if route == "" {
		c.renderError(w, r, s, http.StatusForbidden, "This page is not open to sessions signed in with an access-manager token.")
		return false
	}
	err := c.deps.API.Authorize(r.Context(), s.Principal, route)
	if err == nil {
		return true
	}
	c.refused(w, r, s, err)
	return false
}

// refused shows the access manager's refusal of a JWT session's request.
func (c *Console) refused(w http.ResponseWriter, r *http.Request, s *session, err error) {
	switch hub.ErrorCode(err) {
	case hub.EFORBIDDEN:
		c.renderError(w, r, s, http.StatusForbidden, "The access manager does not allow you this page or action (anymore). Ask whoever grants your access, or sign in again with another token.")
	case hub.EUNAUTHORIZED:
		c.renderError(w, r, s, http.StatusUnauthorized, "The access manager no longer accepts the token this session was opened with: sign in again.")
	case hub.ENOTFOUND:
		c.renderError(w, r, s, http.StatusForbidden, "The access manager does not know this session's token: sign in again.")
	case api.CodeAuthUnavailable:
		c.renderError(w, r, s, http.StatusServiceUnavailable, "The access manager could not be asked, so nothing was done: try again in a moment.")
	default:
		c.internalError(w, r, s, err)
	}
}

// The JWT of a session opened with one is stored sealed (AES-256-GCM) under
// a key derived from the session's cookie token, which only the browser
// holds: the store alone cannot open it. The session's token hash is the
// additional data, so a sealed token opens only in its own session.
const jwtLabel = "streaming-hub console jwt"

func jwtCipher(sessionToken string) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, []byte(sessionToken))
	m.Write([]byte(jwtLabel))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func sealJWT(sessionToken, tokenHash, jwt string) ([]byte, error) {
	aead, err := jwtCipher(sessionToken)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	return aead.Seal(nonce, nonce, []byte(jwt), []byte(jwtLabel+"\x00"+tokenHash)), nil
}

func openJWT(sessionToken, tokenHash string, sealed []byte) (string, error) {
	aead, err := jwtCipher(sessionToken)
	if err != nil {
		return "", err
	}
	if len(sealed) < aead.NonceSize() {
		return "", errors.New("no sealed token")
	}
	plain, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], []byte(jwtLabel+"\x00"+tokenHash))
	return string(plain), err
}
