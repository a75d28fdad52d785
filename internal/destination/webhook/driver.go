package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
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
	dial   destination.Dialer
	client *http.Client
	// tokens are the OAuth 2.0 tokens of oauth2_client_credentials
	// destinations, fetched through the destination's client (Client).
	tokens *TokenCache
	// tls holds a client per mutual TLS setting in use (by
	// destination.TLSKey): connections made with one client certificate
	// or trust are never reused by a destination with another.
	tls *destination.Pool[*tlsClient]
	now func() time.Time
}

// tlsClient is a client for one destination TLS setting and when its
// client certificate expires (zero: none).
type tlsClient struct {
	*http.Client
	notAfter time.Time
}

// New returns the webhook driver, dialing with d.
func New(d destination.Dialer) *Driver {
	return &Driver{dial: d, client: NewClient(d), now: time.Now, tokens: NewTokenCache(MaxCachedTokens),
		tls: destination.NewPool(nil, func(c *tlsClient) { c.CloseIdleConnections() })}
}

// Client is the HTTP client for t's endpoints (its TLS settings, the
// dialer, the egress proxy); release must be called once the request is
// over. A client certificate expired now is an error. Anything sending to
// a tenant's endpoint (a token request, say) uses it, so it leaves the
// way attempts do.
func (d *Driver) Client(t destination.Target) (c *http.Client, release func(), err error) {
	if !t.HasTLSSettings() {
		return d.client, func() {}, nil
	}
	now := d.now()
	tc, release, err := d.tls.Acquire(destination.TLSKey(t), func() (*tlsClient, error) {
		cfg, err := destination.TLSConfig(t, now)
		if err != nil {
			return nil, err
		}
		c := &tlsClient{Client: &http.Client{Transport: NewTransport(d.dial, cfg), CheckRedirect: d.client.CheckRedirect}}
		if len(cfg.Certificates) > 0 {
			c.notAfter = cfg.Certificates[0].Leaf.NotAfter
		}
		return c, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if !tc.notAfter.IsZero() && !now.Before(tc.notAfter) {
		release()
		return nil, nil, destination.ExpiredCertificateError{At: tc.notAfter.UTC()}
	}
	return tc.Client, release, nil
}

// Send POSTs m to t and reads the answer: a 2xx is a success (with the
// challenge in its body, for a probe), anything else a failure naming the
// status; no answer is a failure with the transport's error (the send path
// words it for the tenant: destination.Explain).
//
// An oauth2_client_credentials destination gets its bearer from the token
// cache (fetched first if needed, an attempt failure naming token_url if
// that fails); its 401 drops the token, so the retry fetches a new one.
// m.Time is the cache's clock. The token request leaves as attempts do:
// the destination's TLS settings, the SSRF-safe dialer, the egress proxy.
func (d *Driver) Send(ctx context.Context, t destination.Target, m destination.Message) destination.Result {
	client, release, err := d.Client(t)
	if err != nil {
		return destination.Result{Err: err}
	}
	defer release()
	var bearer string
	tc := TokenConfigOf(t)
	if t.AuthType == hub.AuthOAuth2ClientCredentials {
		now := m.Time
		if now.IsZero() {
			now = time.Now()
		}
		start := time.Now()
		token, err := d.tokens.Token(ctx, client, tc, now)
		if err != nil {
			return destination.Result{Err: err, Duration: time.Since(start)}
		}
		bearer = token
	}
	req, err := newRequest(ctx, t, m, bearer)
	if err != nil {
		return destination.Result{Err: err}
	}
	if bearer != "" && (tc.Host == "" || Origin(req.URL.String()) != tc.Host) {
		// A token goes only where it was fetched for (the cache is
		// bound to the destination; this holds even if that changed).
		return destination.Result{Err: errors.New("oauth2: the token was fetched for another destination: not sent")}
	}
	sent := sentHeaders(t, req)
	start := time.Now()
	resp, err := client.Do(req)
	res := destination.Result{Duration: time.Since(start), Sent: sent}
	if err != nil {
		// The request's URL may hold a secret in its query: the error
		// under it is what failed (destination.Explain words it for
		// the tenant, the whole of it goes to the log).
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		res.Err = err
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
		d.tokens.Drop(tc, bearer)
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
	d.tls.Close()
	return nil
}
