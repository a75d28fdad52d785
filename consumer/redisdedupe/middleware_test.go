package redisdedupe

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/consumer"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// TestMiddlewareWithRedis: a failed handler is retried, a success is
// remembered in Redis, and the next redelivery is a duplicate that does not
// reach the handler.
func TestMiddlewareWithRedis(t *testing.T) {
	d, _ := newTest(t, Options{})
	var calls, answer atomic.Int32
	answer.Store(http.StatusInternalServerError)
	mw, err := consumer.Middleware(consumer.Options{Secrets: []string{testSecret}, Deduper: d})
	if err != nil {
		t.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(int(answer.Load()))
	}))
	send := func(deliveryID string) int {
		body := `{"amount":"10.00"}`
		ts := time.Now().Unix()
		sig, err := consumer.Sign(testSecret, "evt-1", ts, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodPost, "/webhooks", strings.NewReader(body))
		r.Header.Set("webhook-id", "evt-1")
		r.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		r.Header.Set("webhook-signature", sig)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(consumer.HeaderEventID, "evt-1")
		r.Header.Set(consumer.HeaderDeliveryID, deliveryID)
		r.Header.Set(consumer.HeaderEventType, "transaction.posted")
		r.Header.Set(consumer.HeaderTenantID, "acme")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	if c := send("dlv-1"); c != http.StatusInternalServerError {
		t.Fatalf("failing handler: %d, want 500", c)
	}
	answer.Store(http.StatusNoContent)
	if c := send("dlv-2"); c != http.StatusNoContent {
		t.Fatalf("retry: %d, want 204", c)
	}
	if c := send("dlv-3"); c != http.StatusOK {
		t.Fatalf("duplicate: %d, want 200", c)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("handler called %d times, want 2", n)
	}
}
