package webhook

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// maxProbeAnswer is how much of a probe's answer is searched for the
// challenge.
const maxProbeAnswer = 64 << 10

// Driver sends to webhook destinations.
type Driver struct {
	client *http.Client
	// tokens are the OAuth 2.0 tokens of oauth2_client_credentials
	// destinations, fetched through client.
	tokens *TokenCache
}

// New returns the webhook driver, dialing with d.
func New(d destination.Dialer) *Driver {
	return &Driver{client: NewClient(d), tokens: NewTokenCache(MaxCachedTokens)}
}

// Send POSTs m to t and reads the answer: a 2xx is a success (with the
// challenge in its body, for a probe), anything else a failure naming the
// status; no answer is a failure with Describe's text.
//
// An oauth2_client_credentials destination gets its bearer from the token
// cache (fetched first if needed, an attempt failure naming token_url if
// that fails); its 401 drops the token, so the retry fetches a new one.
// m.Time is the cache's clock.
func (d *Driver) Send(ctx context.Context, t destination.Target, m destination.Message) destination.Result {
	var bearer string
	if t.AuthType == hub.AuthOAuth2ClientCredentials {
		now := m.Time
		if now.IsZero() {
			now = time.Now()
		}
		start := time.Now()
		token, err := d.tokens.Token(ctx, d.client, TokenConfigOf(t), now)
		if err != nil {
			return destination.Result{Err: err, Duration: time.Since(start)}
		}
		bearer = token
	}
	req, err := newRequest(ctx, t, m, bearer)
	if err != nil {
		return destination.Result{Err: err}
	}
	sent := sentHeaders(t, req)
	start := time.Now()
	resp, err := d.client.Do(req)
	res := destination.Result{Duration: time.Since(start), Sent: sent}
	if err != nil {
		res.Err = destination.Described(err)
		return res
	}
	defer resp.Body.Close()
	limit := int64(hub.MaxResponseBody)
	if m.Challenge != "" {
		limit = maxProbeAnswer
	}
	body := readLimited(resp.Body, limit)
	res.Status, res.Header = resp.StatusCode, resp.Header
	res.Body = store.CleanText(string(body), hub.MaxResponseBody)
	switch {
	case res.Status == http.StatusUnauthorized && bearer != "":
		d.tokens.Drop(TokenConfigOf(t), bearer)
		res.Err = fmt.Errorf("destination answered 401: the OAuth 2.0 token is dropped, the next attempt fetches a new one")
	case res.Status < 200 || res.Status > 299:
		res.Err = fmt.Errorf("destination answered %d", res.Status)
	case m.Challenge != "" && !bytes.Contains(body, []byte(m.Challenge)):
		res.Err = fmt.Errorf("destination answered 2xx but its body does not contain the challenge")
	}
	return res
}

// Close closes the idle connections.
func (d *Driver) Close() error {
	d.client.CloseIdleConnections()
	return nil
}
