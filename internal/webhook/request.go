package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// Target is a destination with its secrets opened (in memory only).
type Target struct {
	URL            string
	Headers        map[string]string
	AuthType       string
	AuthHeaderName string
	Credentials    hub.Credentials
	Secrets        []string // valid signing secrets, current first
}

// Message is what one request carries.
type Message struct {
	ID          string      // webhook-id: the ce-id (or probe_<random>)
	Body        []byte      // sent unchanged
	ContentType string      // Content-Type
	Headers     http.Header // X-Lerian-*, ce-*: the hub's own
}

// NewRequest builds a signed POST of m to t at now. Custom headers go first
// and the hub's own last, so nothing a subscriber configured can replace
// them (validation refuses it anyway).
func NewRequest(ctx context.Context, t Target, m Message, now time.Time) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(m.Body))
	if err != nil {
		return nil, err
	}
	for k, v := range t.Headers {
		req.Header.Set(k, v)
	}
	switch t.AuthType {
	case hub.AuthBearer:
		req.Header.Set("Authorization", "Bearer "+t.Credentials.Token)
	case hub.AuthBasic:
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(t.Credentials.Username+":"+t.Credentials.Password)))
	case hub.AuthHeader:
		req.Header.Set(t.AuthHeaderName, t.Credentials.Value)
	}
	if err := SignedHeaders(req.Header, t.Secrets, m, now); err != nil {
		return nil, err
	}
	return req, nil
}

// SignedHeaders sets on h the hub's headers of m (X-Lerian-*, ce-*, ...),
// Content-Type, User-Agent and the Standard Webhooks signature at now:
// what every attempt carries, to a webhook or a broker.
func SignedHeaders(h http.Header, secrets []string, m Message, now time.Time) error {
	for k, vs := range m.Headers {
		h[k] = vs
	}
	ts := now.Unix()
	sig, err := Sign(secrets, m.ID, ts, m.Body)
	if err != nil {
		return err
	}
	h.Set("Content-Type", m.ContentType)
	h.Set("User-Agent", hub.UserAgent())
	h.Set("webhook-id", m.ID)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", sig)
	return nil
}

// readLimited reads at most n bytes of r and drains (a bounded amount of)
// the rest so the connection can be reused.
func readLimited(r io.Reader, n int64) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, n))
	io.CopyN(io.Discard, r, 64<<10)
	return b
}
