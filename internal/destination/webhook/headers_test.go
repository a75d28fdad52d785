package webhook

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// TestClient_BoundsResponseHeaders: a receiver flooding headers gets a
// failed attempt, not megabytes of the hub's memory.
func TestClient_BoundsResponseHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 200 {
			w.Header().Add("X-Flood", strings.Repeat("f", 1000)+string(rune('a'+i%26)))
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	c := NewClient(destination.NewDialer(destination.DialOptions{AllowPrivate: true}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, nil)
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("200 KB of response headers accepted")
	}
	if got := destination.Describe(err); !strings.Contains(got, "response headers exceed 64 KiB") {
		t.Fatalf("Describe = %q", got)
	}
	if got := destination.Describe(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}); !strings.Contains(got, "does not speak TLS") {
		t.Fatalf("destination.Describe(record header) = %q", got)
	}
}
