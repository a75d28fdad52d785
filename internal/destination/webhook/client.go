package webhook

import (
	"crypto/tls"
	"net/http"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// IdleConnsPerHost is how many idle connections a host keeps: as many as a
// process has attempts in flight at its default (DISPATCH_MAX_IN_FLIGHT,
// a test in internal/app holds them equal). Many tenants' endpoints often
// share one host (a platform's ingress); with fewer, unordered
// subscriptions on one host closed and redialed connections at every
// burst.
const IdleConnsPerHost = 1024

// NewClient returns the HTTP client for webhook destinations. It dials
// with d (which refuses private addresses unless allowed, and tunnels
// through the egress proxy when one is set), never follows redirects and
// ignores proxy variables. It has no timeout of its own: the send path
// gives each attempt the delivery timeout as its context's deadline.
func NewClient(d destination.Dialer) *http.Client {
	return &http.Client{
		Transport:     NewTransport(d, nil),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// NewTransport is the transport of NewClient with tc as its TLS (nil: the
// system roots, TLS 1.2 at least): what webhook attempts, probes, test
// events and any other request to a tenant's endpoint go through, so they
// all leave by the same dialer and egress proxy.
func NewTransport(d destination.Dialer, tc *tls.Config) *http.Transport {
	if tc == nil {
		tc = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return &http.Transport{
		DialContext:       d.DialContext,
		TLSClientConfig:   tc,
		ForceAttemptHTTP2: true,
		// Workers reuse connections: a busy destination keeps one
		// per concurrent attempt instead of dialing for each.
		MaxIdleConns:          2 * IdleConnsPerHost,
		MaxIdleConnsPerHost:   IdleConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// A receiver flooding headers cannot make the hub hold
		// megabytes per attempt (Go's default is 10 MiB).
		MaxResponseHeaderBytes: destination.MaxResponseHeaderBytes,
	}
}
