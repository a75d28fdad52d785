package api

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// CodeAuthUnavailable is the error code of a request the access manager
// could not decide (SPEC 26): 503, never an allow.
const CodeAuthUnavailable = "auth_unavailable"

func init() { statuses[CodeAuthUnavailable] = http.StatusServiceUnavailable }

// routeResources names the access manager's resource of each API route, by
// the pattern it is registered under (SPEC 26). A route missing here is
// refused 403 to a JWT; TestAccessManager_EveryRouteHasAResource keeps the
// table whole. DLQ routes are "dlq".
var routeResources = map[string]string{
	"GET /v1/admin/rejections":             "rejections",
	"GET /v1/admin/manifests":              "manifests",
	"GET /v1/admin/dlq":                    "dlq",
	"GET /v1/admin/health":                 "deliveries", // the hub's delivery attempts; SPEC 26 lists no resource of its own
	"GET /v1/admin/lookup":                 "tenants",
	"GET /v1/admin/disabled-subscriptions": "subscriptions",

	"POST /v1/tenants":                               "tenants",
	"GET /v1/tenants":                                "tenants",
	"GET /v1/tenants/{id}":                           "tenants",
	"PATCH /v1/tenants/{id}":                         "tenants",
	"POST /v1/tenants/{id}/keys":                     "keys",
	"GET /v1/tenants/{id}/keys":                      "keys",
	"DELETE /v1/tenants/{id}/keys/{key_id}":          "keys",
	"POST /v1/tenants/{id}/portal-links":             "portal-links",
	"GET /v1/tenants/{id}/portal-links":              "portal-links",
	"DELETE /v1/tenants/{id}/portal-links/{link_id}": "portal-links",
	"POST /v1/subscriptions":                         "subscriptions",
	"GET /v1/subscriptions":                          "subscriptions",
	"GET /v1/subscriptions/{id}":                     "subscriptions",
	"PATCH /v1/subscriptions/{id}":                   "subscriptions",
	"DELETE /v1/subscriptions/{id}":                  "subscriptions",
	"POST /v1/subscriptions/{id}/verify":             "subscriptions",
	"POST /v1/subscriptions/{id}/rotate-secret":      "subscriptions",
	"POST /v1/subscriptions/{id}/replay":             "subscriptions",
	"GET /v1/subscriptions/{id}/health":              "subscriptions",
	"POST /v1/subscriptions/{id}/test":               "subscriptions",
	"POST /v1/subscriptions/{id}/transform-preview":  "subscriptions",
	"GET /v1/subscriptions/{id}/deliveries":          "deliveries",
	"GET /v1/deliveries":                             "deliveries",
	"GET /v1/deliveries/{id}":                        "deliveries",
	"POST /v1/deliveries/{id}/replay":                "deliveries",
	"GET /v1/events":                                 "events",
	"GET /v1/events/{id}":                            "events",
	"GET /v1/event-types":                            "event-types",
}

// unauthenticatedRoutes answer without credentials: no resource.
var unauthenticatedRoutes = map[string]bool{
	"GET /healthz": true, "GET /readyz": true, "GET /metrics": true, "GET /v1/openapi.json": true,
}

// actionOf is the access manager's action for a method.
func actionOf(method string) string {
	if method == http.MethodHead {
		return "get"
	}
	return strings.ToLower(method)
}

// accessManager asks Lerian's access manager (lib-auth's plugin-auth)
// whether a JWT may act, and keeps its decisions for AUTH_CACHE_TTL.
type accessManager struct {
	cfg    config.Auth
	client *http.Client

	mu    sync.Mutex
	cache map[[sha256.Size]byte]cached
}

type cached struct {
	allow bool
	until time.Time
}

// maxCachedDecisions bounds the decision cache.
const maxCachedDecisions = 10000

func newAccessManager(cfg config.Auth, client *http.Client) *accessManager {
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		client = &http.Client{Transport: tr}
	}
	c := *client
	c.Timeout = cfg.Timeout
	// A redirect is never followed: it is an answer that decides nothing.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &accessManager{cfg: cfg, client: &c, cache: make(map[[sha256.Size]byte]cached)}
}

// claims are what the hub reads of a JWT (SPEC 26).
type claims struct {
	Type     string  `json:"type"`
	Owner    string  `json:"owner"`
	Sub      string  `json:"sub"`
	Azp      string  `json:"azp"`
	TenantID string  `json:"tenantId"`
	Exp      float64 `json:"exp"`
	Iss      string  `json:"iss"`
}

func (c claims) expires() time.Time {
	return time.Unix(0, int64(c.Exp*float64(time.Second))).UTC()
}

// subject is <owner>/<sub> for a normal user, <sub> for an application.
func (c claims) subject() (string, error) {
	switch {
	case c.Sub == "":
		return "", errors.New("no sub")
	case c.Type == "application":
		return c.Sub, nil
	case c.Type != "normal-user":
		return "", fmt.Errorf("type %q is neither normal-user nor application", c.Type)
	case c.Owner == "":
		return "", errors.New("a normal-user token without an owner")
	}
	return c.Owner + "/" + c.Sub, nil
}

func b64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// parse reads token's claims; with keys configured it checks the RS256
// signature first, and iss when AUTH_JWT_ISSUER is set. exp is checked
// always: an expired token, or one without exp, is refused.
func (a *accessManager) parse(token string, now time.Time) (claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return claims{}, errors.New("not a JWT")
	}
	hdr, err := b64(parts[0])
	if err != nil {
		return claims{}, errors.New("bad JOSE header")
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(hdr, &h) != nil {
		return claims{}, errors.New("bad JOSE header")
	}
	if len(a.cfg.Keys) > 0 {
		if h.Alg != "RS256" {
			return claims{}, fmt.Errorf("alg %q is not RS256", h.Alg)
		}
		sig, err := b64(parts[2])
		if err != nil {
			return claims{}, errors.New("bad signature")
		}
		digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		ok := false
		for _, k := range a.cfg.Keys {
			if rsa.VerifyPKCS1v15(k, crypto.SHA256, digest[:], sig) == nil {
				ok = true
				break
			}
		}
		if !ok {
			return claims{}, errors.New("bad signature")
		}
	}
	body, err := b64(parts[1])
	if err != nil {
		return claims{}, errors.New("bad claims")
	}
	var c claims
	if err := json.Unmarshal(body, &c); err != nil {
		return claims{}, errors.New("bad claims")
	}
	if c.Exp <= 0 || !now.Before(c.expires()) {
		return claims{}, errors.New("expired or without exp")
	}
	if a.cfg.Issuer != "" && c.Iss != a.cfg.Issuer {
		return claims{}, errors.New("wrong issuer")
	}
	return c, nil
}

// question is the body of POST /v1/authorize.
type question struct {
	Sub      string `json:"sub"`
	Resource string `json:"resource"`
	Action   string `json:"action"`
	ClientIP string `json:"clientIp,omitempty"`
}

// outcome is one decision, as the metric counts it.
type outcome struct {
	label string // allowed | denied | unavailable | cached
	err   error  // nil: allowed
}

func (a *accessManager) cacheKey(token string, q question) [sha256.Size]byte {
	th := sha256.Sum256([]byte(token))
	h := sha256.New()
	h.Write(th[:])
	for _, s := range []string{q.Sub, q.Resource, q.Action, q.ClientIP} {
		h.Write([]byte{0})
		h.Write([]byte(s))
	}
	var k [sha256.Size]byte
	copy(k[:], h.Sum(nil))
	return k
}

var errDenied = hub.Errorf(hub.EFORBIDDEN, "the access manager does not authorize this")

// decide asks the access manager (or the cache) about q.
func (a *accessManager) decide(ctx context.Context, authorization, token string, q question, now time.Time) outcome {
	var key [sha256.Size]byte
	if a.cfg.CacheTTL > 0 {
		key = a.cacheKey(token, q)
		a.mu.Lock()
		c, ok := a.cache[key]
		a.mu.Unlock()
		if ok && now.Before(c.until) {
			if c.allow {
				return outcome{label: "cached"}
			}
			return outcome{label: "cached", err: errDenied}
		}
	}
	o := a.ask(ctx, authorization, q)
	if a.cfg.CacheTTL > 0 && (o.label == "allowed" || o.err == errDenied) {
		a.mu.Lock()
		if len(a.cache) >= maxCachedDecisions {
			for k, c := range a.cache {
				if !now.Before(c.until) {
					delete(a.cache, k)
				}
			}
			if len(a.cache) >= maxCachedDecisions {
				clear(a.cache)
			}
		}
		a.cache[key] = cached{allow: o.err == nil, until: now.Add(a.cfg.CacheTTL)}
		a.mu.Unlock()
	}
	return o
}

func unavailable(format string, args ...any) outcome {
	return outcome{label: "unavailable", err: hub.Errorf(CodeAuthUnavailable, "the access manager could not decide: "+format, args...)}
}

// ask is one POST /v1/authorize. Only a 2xx with "authorized": true
// allows; anything it cannot read is unavailable, never an allow.
func (a *accessManager) ask(ctx context.Context, authorization string, q question) outcome {
	body, _ := json.Marshal(q)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.Address+"/v1/authorize", bytes.NewReader(body))
	if err != nil {
		return unavailable("%s", err)
	}
	req.Header.Set("Authorization", authorization)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return unavailable("no answer")
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return outcome{label: "denied", err: hub.Errorf(hub.EUNAUTHORIZED, "the access manager refused this token")}
	case resp.StatusCode == http.StatusForbidden:
		return outcome{label: "denied", err: errDenied}
	case resp.StatusCode == http.StatusNotFound:
		return outcome{label: "denied", err: hub.Errorf(hub.ENOTFOUND, "the access manager answered not found")}
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return unavailable("status %d", resp.StatusCode)
	case err != nil:
		return unavailable("a truncated answer")
	}
	var ans struct {
		Authorized *bool `json:"authorized"`
	}
	if json.Unmarshal(data, &ans) != nil || ans.Authorized == nil {
		return unavailable("an answer without \"authorized\"")
	}
	if !*ans.Authorized {
		return outcome{label: "denied", err: errDenied}
	}
	return outcome{label: "allowed"}
}

// clientIP is the address attributable to the request: when the socket
// peer is one of TRUSTED_PROXIES, the right-most X-Forwarded-For hop
// outside them; otherwise the peer itself. "" when none is.
func clientIP(r *http.Request, trusted []*net.IPNet) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer := net.ParseIP(host)
	if peer == nil {
		return ""
	}
	if !inNets(peer, trusted) {
		return peer.String()
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		ip := net.ParseIP(strings.TrimSpace(hops[i]))
		if ip == nil {
			return "" // a hop that is no address: nothing left to trust
		}
		if !inNets(ip, trusted) {
			return ip.String()
		}
	}
	return ""
}

func inNets(ip net.IP, nets []*net.IPNet) bool {
	for _, n := range nets {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// authenticateJWT authenticates a bearer that is neither the admin token
// nor a key as a JWT, and has the access manager authorize it for
// resource and action (SPEC 26). A token with a tenantId acts on that
// tenant only; one without acts as an operator.
//
// At the console's sign-in (signIn) the question is the console's first
// page: tenants/get for an operator, subscriptions/get for a tenant.
func (s *Server) authenticateJWT(r *http.Request, token string, signIn bool) (principal, error) {
	m := s.access
	now := s.now()
	c, err := m.parse(token, now)
	var subject string
	if err == nil {
		subject, err = c.subject()
	}
	if err != nil {
		s.countDecision("invalid_token")
		s.throttle.fail(clientAddr(r))
		s.countAuthFailure("invalid")
		return principal{}, hub.Errorf(hub.EUNAUTHORIZED, "invalid bearer token")
	}
	p := principal{Admin: c.TenantID == "", TenantID: c.TenantID, Subject: subject,
		TokenHash: store.HashToken(token), Expires: c.expires()}
	if c.TenantID != "" {
		t, err := s.deps.Store.GetTenant(r.Context(), c.TenantID)
		if hub.ErrorCode(err) == hub.ENOTFOUND || err == nil && t.Status != hub.TenantActive {
			return principal{}, hub.Errorf(hub.EFORBIDDEN, "the token's tenant is unknown or inactive")
		}
		if err != nil {
			return principal{}, err
		}
	}
	authorization := r.Header.Get("Authorization")
	resource, action := routeResources[r.Pattern], actionOf(r.Method)
	if signIn {
		authorization, resource, action = "", "tenants", "get"
		if c.TenantID != "" {
			resource = "subscriptions"
		}
	}
	if resource == "" {
		return principal{}, hub.Errorf(hub.EFORBIDDEN, "this endpoint is not open to access-manager tokens")
	}
	if authorization == "" {
		authorization = "Bearer " + token
	}
	q := question{Sub: subject, Resource: resource, Action: action, ClientIP: clientIP(r, m.cfg.TrustedProxies)}
	ctx, cancel := context.WithTimeout(r.Context(), m.cfg.Timeout)
	defer cancel()
	o := m.decide(ctx, authorization, token, q, now)
	s.countDecision(o.label)
	if o.err != nil {
		if o.label == "unavailable" {
			s.deps.Logger.Warn("the access manager could not decide", "err", o.err, "request_id", requestID(r.Context()))
		}
		return principal{}, o.err
	}
	return p, nil
}

func (s *Server) countDecision(outcome string) {
	if m := s.deps.Metrics; m != nil {
		m.AuthDecisions.WithLabelValues(outcome).Inc()
	}
}
