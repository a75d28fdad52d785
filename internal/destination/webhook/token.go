package webhook

// The OAuth 2.0 client credentials tokens of webhook destinations (RFC
// 6749 section 4.4), cached per subscription
// (docs/receivers.md#oauth-20-client-credentials).

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

const (
	// TokenExpiryMargin: a token is used until this long before its
	// expires_in ends, so that no attempt carries one about to expire.
	TokenExpiryMargin = 30 * time.Second
	// DefaultTokenLifetime is how long a token whose answer has no expires_in
	// is used.
	DefaultTokenLifetime = 5 * time.Minute
	// MaxCachedTokens bounds the tokens one process keeps (one per
	// subscription); past it, expired ones and then any go first.
	MaxCachedTokens = 10000
	// maxTokenAnswer bounds the token endpoint's answer read.
	maxTokenAnswer = 64 << 10
)

// TokenConfig is what a token is fetched with: a subscription's
// oauth2_client_credentials settings and client secret, and the
// destination it is for.
type TokenConfig struct {
	SubscriptionID string
	hub.OAuth2
	ClientSecret string
	// Host is the origin (scheme://host:port) of the destination the token
	// is for: the only one it is ever sent to.
	Host string
	// Destination identifies the whole destination as the token was
	// fetched for it (its URL, headers, TLS settings, auth and secrets):
	// any change of it, not of the auth alone, drops the token.
	Destination [32]byte
}

// TokenConfigOf is t's token configuration.
func TokenConfigOf(t destination.Target) TokenConfig {
	return TokenConfig{SubscriptionID: t.SubscriptionID, OAuth2: t.OAuth2, ClientSecret: t.Credentials.ClientSecret,
		Host: Origin(t.URL), Destination: destinationPrint(t)}
}

// Origin is a URL's scheme, host and port (the scheme's when none is
// written), lower-cased: where a request to it goes. "" for no URL.
func Origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port))
}

// destinationPrint is a digest of everything t's token depends on or goes
// with: the destination as stored, its opened credentials and client key.
func destinationPrint(t destination.Target) [32]byte {
	b, _ := json.Marshal(struct {
		D   hub.Destination
		C   hub.Credentials
		Key string
	}{t.Destination, t.Credentials, t.ClientKey})
	return sha256.Sum256(b)
}

// fingerprint changes with anything the token depends on or goes with, so
// a PATCH of the settings, the secret or any part of the destination (its
// URL above all) replaces the cached token.
func (c TokenConfig) fingerprint() [32]byte {
	return sha256.Sum256([]byte(strings.Join([]string{c.TokenURL, c.ClientID, c.ClientSecret, c.Scope, c.Audience, c.ClientAuth,
		c.Host, string(c.Destination[:])}, "\x00")))
}

// TokenCache holds one token per subscription. Attempts of a subscription that
// find no valid token wait for one fetch instead of each making its own.
type TokenCache struct {
	mu      sync.Mutex
	entries map[string]*tokenEntry
	max     int
}

type tokenEntry struct {
	fp      [32]byte
	host    string        // the origin it was fetched for (TokenConfig.Host)
	ready   chan struct{} // closed once the fetch ended
	token   string
	expires time.Time
	err     error
}

// NewTokenCache returns an empty cache of at most max tokens (<= 0: MaxCachedTokens).
func NewTokenCache(max int) *TokenCache {
	if max <= 0 {
		max = MaxCachedTokens
	}
	return &TokenCache{entries: make(map[string]*tokenEntry), max: max}
}

// Token returns a token for cfg valid at now: the cached one, or one
// fetched with client (the destination's, so the token URL is dialed with
// the same SSRF rules and TLS as the webhook). Its errors name the token
// URL and never hold the secret or a token.
func (c *TokenCache) Token(ctx context.Context, client *http.Client, cfg TokenConfig, now time.Time) (string, error) {
	fp := cfg.fingerprint()
	c.mu.Lock()
	if e := c.entries[cfg.SubscriptionID]; e != nil && e.fp == fp && e.host == cfg.Host {
		select {
		case <-e.ready:
			if e.err == nil && now.Before(e.expires) {
				c.mu.Unlock()
				return e.token, nil
			}
		default:
			c.mu.Unlock()
			select {
			case <-e.ready:
				if e.err != nil {
					return "", e.err
				}
				return e.token, nil
			case <-ctx.Done():
				return "", fmt.Errorf("oauth2: token_url %s: %s", urlName(cfg.TokenURL), destination.Explain(ctx.Err(), destination.WrittenURL(cfg.TokenURL), 0))
			}
		}
	}
	e := &tokenEntry{fp: fp, host: cfg.Host, ready: make(chan struct{})}
	c.put(cfg.SubscriptionID, e, now)
	c.mu.Unlock()

	token, lifetime, err := fetchToken(ctx, client, cfg)
	c.mu.Lock()
	e.token, e.err, e.expires = token, err, now.Add(lifetime)
	if err != nil && c.entries[cfg.SubscriptionID] == e {
		delete(c.entries, cfg.SubscriptionID) // the next attempt fetches again
	}
	close(e.ready)
	c.mu.Unlock()
	return token, err
}

// Drop forgets cfg's token if it is still token: the receiver refused it
// (401), so the next attempt fetches a new one. A token fetched meanwhile
// by another attempt stays.
func (c *TokenCache) Drop(cfg TokenConfig, token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[cfg.SubscriptionID]
	if e == nil {
		return
	}
	select {
	case <-e.ready:
		if e.token == token {
			delete(c.entries, cfg.SubscriptionID)
		}
	default:
	}
}

// Len is how many tokens (or fetches under way) the cache holds.
func (c *TokenCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// put stores e under key, making room first: expired tokens go, then, if
// the cache is still full, any finished one.
func (c *TokenCache) put(key string, e *tokenEntry, now time.Time) {
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		for k, old := range c.entries {
			if done(old) && !now.Before(old.expires) {
				delete(c.entries, k)
			}
		}
		for k, old := range c.entries {
			if len(c.entries) < c.max {
				break
			}
			if done(old) {
				delete(c.entries, k)
			}
		}
	}
	c.entries[key] = e
}

func done(e *tokenEntry) bool {
	select {
	case <-e.ready:
		return true
	default:
		return false
	}
}

// tokenAnswerJSON is a token endpoint's answer (RFC 6749 sections 5.1, 5.2).
type tokenAnswerJSON struct {
	AccessToken string          `json:"access_token"`
	TokenType   string          `json:"token_type"`
	ExpiresIn   json.RawMessage `json:"expires_in"`
	Error       string          `json:"error"`
}

// fetch asks the token endpoint for a token: a form POST of
// grant_type=client_credentials (scope and audience when set), the client
// authenticated by HTTP Basic or in the body. lifetime is how long the
// token may be used.
func fetchToken(ctx context.Context, client *http.Client, cfg TokenConfig) (token string, lifetime time.Duration, err error) {
	name := urlName(cfg.TokenURL)
	form := url.Values{"grant_type": {"client_credentials"}}
	if cfg.Scope != "" {
		form.Set("scope", cfg.Scope)
	}
	if cfg.Audience != "" {
		form.Set("audience", cfg.Audience)
	}
	if cfg.ClientAuth == hub.OAuth2ClientAuthBody {
		form.Set("client_id", cfg.ClientID)
		form.Set("client_secret", cfg.ClientSecret)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, fmt.Errorf("oauth2: token_url %s: not a valid URL", name)
	}
	if cfg.ClientAuth != hub.OAuth2ClientAuthBody {
		// RFC 6749 section 2.3.1: both form-encoded before base64.
		req.SetBasicAuth(url.QueryEscape(cfg.ClientID), url.QueryEscape(cfg.ClientSecret))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", hub.UserAgent())
	resp, err := client.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("oauth2: token_url %s: %s", name, destination.Explain(err, destination.WrittenURL(cfg.TokenURL), 0))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenAnswer))
	if err != nil {
		return "", 0, fmt.Errorf("oauth2: token_url %s: reading the answer: %s", name, destination.Explain(err, destination.WrittenURL(cfg.TokenURL), 0))
	}
	var a tokenAnswerJSON
	jsonErr := json.Unmarshal(body, &a)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("oauth2: token_url %s answered %d", name, resp.StatusCode)
		if jsonErr == nil && errorCode(a.Error) {
			msg += " (" + a.Error + ")"
		}
		return "", 0, errors.New(msg)
	}
	switch {
	case jsonErr != nil:
		return "", 0, fmt.Errorf("oauth2: token_url %s answered %d without a JSON token", name, resp.StatusCode)
	case a.AccessToken == "":
		return "", 0, fmt.Errorf("oauth2: token_url %s answered %d without an access_token", name, resp.StatusCode)
	case a.TokenType != "" && !strings.EqualFold(a.TokenType, "bearer"):
		return "", 0, fmt.Errorf("oauth2: token_url %s answered a token of type %q: only Bearer tokens are supported", name, truncateText(a.TokenType, 32))
	case !headerValue(a.AccessToken):
		return "", 0, fmt.Errorf("oauth2: token_url %s answered an access_token that cannot be sent in a header", name)
	}
	lifetime = DefaultTokenLifetime
	if secs, ok := expiresIn(a.ExpiresIn); ok {
		lifetime = time.Duration(secs)*time.Second - TokenExpiryMargin
		if lifetime < 0 {
			lifetime = 0 // used for this attempt only
		}
	}
	return a.AccessToken, lifetime, nil
}

// expiresIn reads expires_in: a number of seconds, or a string holding
// one (some servers send that).
func expiresIn(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	n, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || n < 0 || n > 1<<31 {
		return 0, false
	}
	return int64(n), true
}

// urlName is a token URL as errors show it: without its query, which may
// hold something secret.
func urlName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.User = "", false, "", nil
	return u.String()
}

// errorCode reports whether s looks like an RFC 6749 error code
// (invalid_client, ...): short, printable ASCII, safe to show.
func errorCode(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// headerValue reports whether a token can go in a header as is.
func headerValue(s string) bool {
	if len(s) > 16<<10 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
