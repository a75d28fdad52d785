package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strconv"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// newRequest builds the POST of m to t. Custom headers go first, then the
// auth, and m's headers (the hub's own and the signature) last, so nothing
// a subscriber configured can replace them (validation refuses it anyway).
// bearer is the OAuth 2.0 token of an oauth2_client_credentials target.
func newRequest(ctx context.Context, t destination.Target, m destination.Message, bearer string) (*http.Request, error) {
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
	case hub.AuthOAuth2ClientCredentials:
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for k, vs := range m.Headers {
		req.Header[k] = vs
	}
	return req, nil
}

// sentHeaders are req's headers as the destination gets them, for the
// attempt log (destination.SentHeaders, secrets redacted), with those the
// transport adds: Content-Length, and Accept-Encoding: gzip when the
// request names no encoding nor range (net/http's transparent
// decompression, which this client keeps on).
func sentHeaders(t destination.Target, req *http.Request) map[string]string {
	h := req.Header.Clone()
	if req.ContentLength >= 0 {
		h.Set("Content-Length", strconv.FormatInt(req.ContentLength, 10))
	}
	if h.Get("Accept-Encoding") == "" && h.Get("Range") == "" {
		h.Set("Accept-Encoding", "gzip")
	}
	return destination.SentHeaders(t, h)
}

// readLimited reads at most n bytes of r and drains (a bounded amount of)
// the rest so the connection can be reused.
func readLimited(r io.Reader, n int64) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, n))
	io.CopyN(io.Discard, r, 64<<10)
	return b
}
