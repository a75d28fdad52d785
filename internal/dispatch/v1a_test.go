package dispatch_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// Deliveries of a v1a subscription reach a receiver that verifies them
// with the consumer package and the subscription's public key alone; with
// a second key inside its overlap each delivery carries two v1a
// signatures, and a receiver trusting either key takes it.
func TestV1a_DeliveriesVerifyWithThePublicKey(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		oldPriv, oldPub := destination.NewKeyPair()
		newPriv, newPub := destination.NewKeyPair()
		var mu sync.Mutex
		trusted := []string{oldPub}
		recv := newSink(t)
		recv.script(func(n int, req *http.Request) (int, http.Header, string) {
			req.Body = io.NopCloser(bytes.NewReader(recv.got()[n-1].body)) // the sink read it
			mu.Lock()
			keys := trusted
			mu.Unlock()
			mw, err := consumer.Middleware(consumer.Options{PublicKeys: keys, Now: r.clock.Now})
			if err != nil {
				return 500, nil, err.Error()
			}
			rec := httptest.NewRecorder()
			mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) })).ServeHTTP(rec, req)
			return rec.Code, nil, rec.Body.String()
		})
		s := storetest.NewSubscription("acme", "sub_v1a")
		s.Destination = hub.Destination{Type: "webhook", URL: recv.URL}
		s.VerificationState, s.MaxInFlight, s.RetrySchedule = hub.VerificationActive, 4, []string{"10s"}
		s.SignatureScheme, s.SigningPublicKey = hub.SignatureV1a, oldPub
		if err := destination.SealSecrets(r.keyring, &s, hub.SubscriptionSecrets{Signing: []hub.SigningSecret{{Secret: oldPriv}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.store.CreateSubscription(r.ctx, s); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			r.publish(event("acme", fmt.Sprintf("e-%d", i)))
		}
		r.stepUntil("three deliveries", func() bool { return len(recv.got()) >= 3 })
		for _, a := range r.subAttempts("sub_v1a") {
			if a.Error != "" {
				t.Fatalf("attempt failed: %+v", a)
			}
		}

		// A rotation: the new key current, the old one inside its overlap.
		got, err := r.store.GetSubscription(r.ctx, "acme", "sub_v1a")
		if err != nil {
			t.Fatal(err)
		}
		until := r.clock.Now().Add(3600e9)
		got.SigningPublicKey = newPub
		if err := destination.SealSecrets(r.keyring, &got, hub.SubscriptionSecrets{Signing: []hub.SigningSecret{
			{Secret: newPriv}, {Secret: oldPriv, ExpiresAt: &until}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.store.UpdateSubscription(r.ctx, got); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		trusted = []string{newPub} // a receiver that already moved on
		mu.Unlock()
		r.publish(event("acme", "e-rotated"))
		r.stepUntil("the fourth delivery", func() bool { return len(recv.got()) >= 4 })
		last := recv.got()[3]
		if sigs := strings.Fields(last.header.Get("webhook-signature")); len(sigs) != 2 || !strings.HasPrefix(sigs[0], "v1a,") || !strings.HasPrefix(sigs[1], "v1a,") {
			t.Fatalf("during the overlap: %q, want two v1a signatures", last.header.Get("webhook-signature"))
		}
		h := http.Header{}
		for k, v := range last.header {
			h[k] = v
		}
		for _, key := range []string{oldPub, newPub} {
			if err := consumer.VerifyV1aAt(key, h, last.body, 0, r.clock.Now()); err != nil {
				t.Fatalf("the delivery does not verify with %s alone: %v", key, err)
			}
		}
		for _, a := range r.subAttempts("sub_v1a") {
			if a.Error != "" {
				t.Fatalf("attempt failed: %+v", a)
			}
		}
	})
}
