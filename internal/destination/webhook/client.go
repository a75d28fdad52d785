package webhook

import (
	"net/http"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// NewClient returns the HTTP client for webhook destinations. It dials
// with d (which refuses private addresses unless allowed), never follows
// redirects and ignores proxy variables. It has no timeout of its own: the
// send path gives each attempt the delivery timeout as its context's
// deadline.
func NewClient(d destination.Dialer) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:       d.DialContext,
			ForceAttemptHTTP2: true,
			// Workers reuse connections: a busy destination keeps one
			// per concurrent attempt instead of dialing for each.
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   256,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			// A receiver flooding headers cannot make the hub hold
			// megabytes per attempt (Go's default is 10 MiB).
			MaxResponseHeaderBytes: destination.MaxResponseHeaderBytes,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
