package consumer

import (
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for the deduper and the timestamp check.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// signedHeaders returns the Standard Webhooks headers of body signed with
// secret, as the hub sends them.
func signedHeaders(t *testing.T, secret, id string, ts int64, body []byte) http.Header {
	t.Helper()
	sig, err := Sign(secret, id, ts, body)
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	h := http.Header{}
	h.Set(HeaderWebhookID, id)
	h.Set(HeaderWebhookTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderWebhookSignature, sig)
	return h
}
