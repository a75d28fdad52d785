package api

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
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
// could not decide (docs/lerian-platform.md): 503, never an allow.
const CodeAuthUnavailable = "auth_unavailable"

func init() { statuses[CodeAuthUnavailable] = http.StatusServiceUnavailable }

// Access is what the access manager is asked about one route: its
// resource and its action (docs/lerian-platform.md#lerians-access-manager).
type Access struct{ Resource, Action string }

// routeAccess is the one table of the access manager's (resource, action)
// for each API route, by the pattern the route is registered under. The
// API asks it for a JWT bearer; the console asks it, through the same
// routes (Server.Call) and for the route behind each of its pages and
// forms (Server.Authorize), for a session opened with a JWT. A route
// missing here is refused 403 to a JWT; TestAccessManager_EveryRouteHasAResource
// keeps the table whole. DLQ routes are "dlq".
var routeAccess = map[string]Access{
	"GET /v1/admin/rejections":                       {"rejections", "get"},
	"POST /v1/admin/rejections/{id}/replay":          {"rejections", "post"},
	"GET /v1/admin/manifests":                        {"manifests", "get"},
	"GET /v1/admin/dlq":                              {"dlq", "get"},
	"GET /v1/admin/health":                           {"deliveries", "get"}, // the hub's delivery attempts; the access manager lists no resource of its own
	"GET /v1/admin/lookup":                           {"tenants", "get"},
	"GET /v1/admin/disabled-subscriptions":           {"subscriptions", "get"},
	"POST /v1/tenants":                               {"tenants", "post"},
	"GET /v1/tenants":                                {"tenants", "get"},
	"GET /v1/tenants/{id}":                           {"tenants", "get"},
	"PATCH /v1/tenants/{id}":                         {"tenants", "patch"},
	"POST /v1/tenants/{id}/keys":                     {"keys", "post"},
	"GET /v1/tenants/{id}/keys":                      {"keys", "get"},
	"DELETE /v1/tenants/{id}/keys/{key_id}":          {"keys", "delete"},
	"POST /v1/tenants/{id}/portal-links":             {"portal-links", "post"},
	"GET /v1/tenants/{id}/portal-links":              {"portal-links", "get"},
	"DELETE /v1/tenants/{id}/portal-links/{link_id}": {"portal-links", "delete"},
	"POST /v1/subscriptions":                         {"subscriptions", "post"},
	"GET /v1/subscriptions":                          {"subscriptions", "get"},
	"GET /v1/subscriptions/{id}":                     {"subscriptions", "get"},
	"PATCH /v1/subscriptions/{id}":                   {"subscriptions", "patch"},
	"DELETE /v1/subscriptions/{id}":                  {"subscriptions", "delete"},
	"POST /v1/subscriptions/{id}/verify":             {"subscriptions", "post"},
	"POST /v1/subscriptions/{id}/rotate-secret":      {"subscriptions", "post"},
	"POST /v1/subscriptions/{id}/replay":             {"subscriptions", "post"},
	"GET /v1/subscriptions/{id}/health":              {"subscriptions", "get"},
	"POST /v1/subscriptions/{id}/test":               {"subscriptions", "post"},
	"POST /v1/subscriptions/{id}/transform-preview":  {"subscriptions", "post"},
	"GET /v1/subscriptions/{id}/deliveries":          {"deliveries", "get"},
	"GET /v1/deliveries":                             {"deliveries", "get"},
	"GET /v1/deliveries/{id}":                        {"deliveries", "get"},
	"POST /v1/deliveries/{id}/replay":                {"deliveries", "post"},
	"GET /v1/events":                                 {"events", "get"},
	"GET /v1/events/{id}":                            {"events", "get"},
	"GET /v1/event-types":                            {"event-types", "get"},
	"GET /v1/aws/setup":                              {"subscriptions", "get"},
}

// RouteAccess is the access manager's (resource, action) for the API route
// registered under pattern ("GET /v1/tenants"); false when a JWT may not
// use it.
func RouteAccess(pattern string) (Access, bool) {
	a, ok := routeAccess[pattern]
	return a, ok
}

// unauthenticatedRoutes answer without credentials: no resource.
var unauthenticatedRoutes = map[string]bool{
	"GET /healthz": true, "GET /readyz": true, "GET /metrics": true, "GET /v1/openapi.json": true,
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

// claims are what the hub reads of a JWT (docs/lerian-platform.md).
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

// readJWT reads token's claims (checking its signature when a verify
// certificate is configured, and its exp always) and its subject.
func (s *Server) readJWT(token string, now time.Time) (claims, string, error) {
	c, err := s.access.parse(token, now)
	if err != nil {
		return claims{}, "", err
	}
	subject, err := c.subject()
	return c, subject, err
}

// authenticateJWT authenticates a bearer that is neither the admin token
// nor a key as a JWT, and has the access manager authorize it for the
// route's resource and action (routeAccess). A token with a tenantId acts
// on that tenant only; one without acts as an operator.
//
// At the console's sign-in (signIn) the question is the console's first
// page: tenants/get for an operator, subscriptions/get for a tenant.
//
// Without a verify certificate the claims are anybody's to write: they are
// sent to the access manager with the token, and used for nothing else (no
// tenant looked up, no principal made) until it has authorized this very
// token (docs/lerian-platform.md#lerians-access-manager).
func (s *Server) authenticateJWT(r *http.Request, token string, signIn bool) (principal, error) {
	m := s.access
	now := s.now()
	c, subject, err := s.readJWT(token, now)
	if err != nil {
		s.countDecision("invalid_token")
		s.throttle.fail(s.clientKey(r))
		s.countAuthFailure("invalid")
		return principal{}, hub.Errorf(hub.EUNAUTHORIZED, "invalid bearer token")
	}
	verified := len(m.cfg.Keys) > 0
	if verified {
		// A verified tenantId is checked first: an unknown tenant costs
		// the access manager no question.
		if err := s.activeTokenTenant(r.Context(), c.TenantID); err != nil {
			return principal{}, err
		}
	}
	authorization := r.Header.Get("Authorization")
	a, ok := routeAccess[r.Pattern]
	if signIn {
		authorization, a, ok = "", Access{"tenants", "get"}, true
		if c.TenantID != "" {
			a.Resource = "subscriptions"
		}
	}
	if !ok {
		return principal{}, hub.Errorf(hub.EFORBIDDEN, "this endpoint is not open to access-manager tokens")
	}
	if authorization == "" {
		authorization = "Bearer " + token
	}
	if err := s.askAccess(r.Context(), authorization, token, subject, a, clientIP(r, m.cfg.TrustedProxies), now); err != nil {
		return principal{}, err
	}
	if !verified {
		if err := s.activeTokenTenant(r.Context(), c.TenantID); err != nil {
			return principal{}, err
		}
	}
	return principal{Admin: c.TenantID == "", TenantID: c.TenantID, Subject: subject,
		TokenHash: store.HashToken(token), Expires: c.expires()}, nil
}

// activeTokenTenant refuses a token's tenantId that names no active tenant.
func (s *Server) activeTokenTenant(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	t, err := s.deps.Store.GetTenant(ctx, id)
	if hub.ErrorCode(err) == hub.ENOTFOUND || err == nil && t.Status != hub.TenantActive {
		return hub.Errorf(hub.EFORBIDDEN, "the token's tenant is unknown or inactive")
	}
	return err
}

// askAccess has the access manager (or its decision cache) decide whether
// token's subject may do a; nil is an allow, anything else a refusal
// (never an allow when it cannot be asked).
func (s *Server) askAccess(ctx context.Context, authorization, token, subject string, a Access, ip string, now time.Time) error {
	m := s.access
	q := question{Sub: subject, Resource: a.Resource, Action: a.Action, ClientIP: ip}
	askCtx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	o := m.decide(askCtx, authorization, token, q, now)
	s.countDecision(o.label)
	if o.err != nil {
		if o.label == "unavailable" {
			s.deps.Logger.Warn("the access manager could not decide", "err", o.err, "request_id", requestID(ctx))
		}
		return o.err
	}
	return nil
}

// SessionPrincipal is p, the principal of a console session opened with a
// JWT, able to be authorized again on each request: jwt is the token that
// opened the session (its store.HashToken is p.TokenHash) and r the
// browser's request, whose client address (through TRUSTED_PROXIES) the
// access manager is told. Decisions are kept for the principal's life (one
// console request) besides the access manager's own cache.
func (s *Server) SessionPrincipal(r *http.Request, p Principal, jwt string) Principal {
	p.jwt = jwt
	if s.access != nil {
		p.clientIP = clientIP(r, s.access.cfg.TrustedProxies)
	}
	p.memo = &decisionMemo{m: make(map[Access]error)}
	return p
}

// Authorize asks the access manager whether p may use the API route
// registered under pattern ("POST /v1/tenants"), exactly as a request of
// that route with p's JWT is asked: the console asks it for the route
// behind each page and form. A principal of the hub's own credentials (no
// JWT) is allowed here: the route's handler applies its rules.
func (s *Server) Authorize(ctx context.Context, p Principal, pattern string) error {
	if p.TokenHash == "" {
		return nil
	}
	a, ok := routeAccess[pattern]
	if !ok {
		return hub.Errorf(hub.EFORBIDDEN, "this endpoint is not open to access-manager tokens")
	}
	return s.reauthorize(ctx, p, a)
}

// reauthorize decides a, for an in-process request of a console session
// opened with a JWT: with the session's token, as the API decides it for
// that token (same question, same cache), failing closed. A session whose
// token is not at hand, has expired, or whose access manager is no longer
// configured is refused.
func (s *Server) reauthorize(ctx context.Context, p Principal, a Access) error {
	if s.access == nil || p.jwt == "" ||
		subtle.ConstantTimeCompare([]byte(store.HashToken(p.jwt)), []byte(p.TokenHash)) != 1 {
		return hub.Errorf(hub.EUNAUTHORIZED, "this session's access-manager token cannot be asked about: sign in again")
	}
	if err, ok := p.memo.get(a); ok {
		return err
	}
	now := s.now()
	c, subject, err := s.readJWT(p.jwt, now)
	if err != nil || subject != p.Subject || c.TenantID != p.TenantID {
		s.countDecision("invalid_token")
		return hub.Errorf(hub.EUNAUTHORIZED, "this session's token is no longer valid: sign in again")
	}
	err = s.askAccess(ctx, "Bearer "+p.jwt, p.jwt, subject, a, p.clientIP, now)
	p.memo.put(a, err)
	return err
}

// decisionMemo keeps one console request's decisions: a page that makes
// many API calls of one resource and action asks once.
type decisionMemo struct {
	mu sync.Mutex
	m  map[Access]error
}

func (d *decisionMemo) get(a Access) (error, bool) {
	if d == nil {
		return nil, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	err, ok := d.m[a]
	return err, ok
}

func (d *decisionMemo) put(a Access, err error) {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.m[a] = err
	d.mu.Unlock()
}

func (s *Server) countDecision(outcome string) {
	if m := s.deps.Metrics; m != nil {
		m.AuthDecisions.WithLabelValues(outcome).Inc()
	}
}
