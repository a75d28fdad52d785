package webhook

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/destinationtest"
)

// The webhook driver passes the conformance suite every driver does: a
// receiver that echoes each request's body (so a probe finds its
// challenge), and a closed port.
func TestWebhook_Conformance(t *testing.T) {
	got := make(chan destinationtest.Delivered, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h := map[string]string{}
		for k, vs := range r.Header {
			h[k] = vs[0]
		}
		got <- destinationtest.Delivered{Body: body, Headers: h}
		w.Write(body)
	}))
	defer srv.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/hook"
	l.Close()
	d := New(destination.NewDialer(destination.DialOptions{AllowPrivate: true}))
	destinationtest.Run(t, destinationtest.Harness{
		Driver:   d,
		Target:   destination.Target{Destination: hub.Destination{Type: hub.DestinationWebhook, URL: srv.URL + "/hook"}},
		Refusing: destination.Target{Destination: hub.Destination{Type: hub.DestinationWebhook, URL: closed}},
		Received: func(t *testing.T, n int) []destinationtest.Delivered {
			var out []destinationtest.Delivered
			for len(out) < n {
				select {
				case d := <-got:
					out = append(out, d)
				case <-time.After(30 * time.Second):
					t.Fatalf("%d requests within 30s, want %d", len(out), n)
				}
			}
			return out
		},
	})
}
