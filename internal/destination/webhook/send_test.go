package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The one send path, with the webhook driver: it signs the message once,
// gives the attempt the delivery timeout as its deadline (the client has
// none of its own) and refuses, in one place, a type with no driver.
func TestRegistrySend_SignsBoundsAndRefusesUnknownTypes(t *testing.T) {
	testkit.Long(t)
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.Header.Clone():
		default:
		}
		if r.URL.Path == "/hang" {
			select { // until the hub gives up (or the test does)
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte("ok\x00"))
	}))
	defer srv.Close()
	r := destination.NewRegistry(200*time.Millisecond, map[string]destination.Driver{
		hub.DestinationWebhook: New(destination.NewDialer(destination.DialOptions{AllowPrivate: true}))})
	secret := destination.NewSecret()
	now := time.Unix(1_800_000_000, 0)
	target := destination.Target{Destination: hub.Destination{Type: hub.DestinationWebhook, URL: srv.URL + "/ok"},
		Secrets: []string{secret}}
	m := destination.Message{ID: "evt-1", ContentType: "application/json", Body: []byte(`{}`), Time: now,
		Headers: http.Header{"ce-id": {"evt-1"}, "X-Lerian-Event-Type": {"transaction.posted"}}}

	res := r.Send(context.Background(), target, m)
	if res.Err != nil || res.Status != http.StatusAccepted || res.Body != "ok\uFFFD" {
		t.Fatalf("result %+v", res)
	}
	h := <-got
	key, _ := destination.SecretKey(secret)
	if h.Get("webhook-id") != "evt-1" || h.Get("webhook-timestamp") != strconv.FormatInt(now.Unix(), 10) ||
		h.Get("webhook-signature") != destination.Signature(key, "evt-1", now.Unix(), []byte(`{}`)) ||
		h.Get("ce-id") != "evt-1" || h.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v", h)
	}
	if m.Headers.Get("webhook-signature") != "" {
		t.Fatal("Send changed the caller's headers")
	}

	target.URL = srv.URL + "/hang"
	start := time.Now()
	res = r.Send(context.Background(), target, m)
	if res.Err == nil || res.Err.Error() != "timeout after 200ms" || time.Since(start) > 10*time.Second {
		t.Fatalf("a destination that never answers: %+v after %v", res, time.Since(start))
	}

	target.Type = "carrier-pigeon"
	if res := r.Send(context.Background(), target, m); res.Err == nil ||
		res.Err.Error() != "this hub process cannot deliver to carrier-pigeon destinations" {
		t.Fatalf("unknown type: %+v", res)
	}
}
