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
	client *http.Client
}

// New returns the webhook driver, dialing with d.
func New(d destination.Dialer) *Driver { return &Driver{client: NewClient(d)} }

// Send POSTs m to t and reads the answer: a 2xx is a success (with the
// challenge in its body, for a probe), anything else a failure naming the
// status; no answer is a failure with the transport's error (the send path
// words it for the tenant: destination.Explain).
func (d *Driver) Send(ctx context.Context, t destination.Target, m destination.Message) destination.Result {
	req, err := newRequest(ctx, t, m)
	if err != nil {
		return destination.Result{Err: err}
	}
	sent := sentHeaders(t, req)
	start := time.Now()
	resp, err := d.client.Do(req)
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
