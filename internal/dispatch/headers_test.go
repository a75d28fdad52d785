package dispatch_test

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// An attempt's log keeps the request headers exactly as the receiver got
// them (the signature included) with the credentials redacted (a bearer
// token, a subscription's own auth header), and the receiver's answer's
// headers, bounded: 32 of them, each value at most 256 bytes.
func TestAttemptHeaders_WhatTheReceiverGotIsLoggedWithSecretsRedacted(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{})
		answer := func(int, *http.Request) (int, http.Header, string) {
			h := http.Header{"X-Receiver": {"r1"}, "X-Long": {strings.Repeat("x", 1000)}, "Set-Cookie": {"a=1", "b=2"}}
			for i := range 40 {
				h.Set(fmt.Sprintf("X-Zflood-%02d", i), "v")
			}
			return 200, h, "ok"
		}
		r.sink.script(answer)
		// A second subscription authenticates with a header of its own.
		keyed := newSink(t)
		keyed.script(answer)
		s := storetest.NewSubscription("acme", "sub_keyed")
		s.Destination = hub.Destination{Type: "webhook", URL: keyed.URL, AuthType: hub.AuthHeader, AuthHeaderName: "X-Api-Key"}
		s.VerificationState, s.MaxInFlight = hub.VerificationActive, 1
		if err := destination.SealSecrets(r.keyring, &s, hub.SubscriptionSecrets{
			Signing: []hub.SigningSecret{{Secret: r.secret}}, Auth: hub.Credentials{Value: "k-secret"},
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.store.CreateSubscription(r.ctx, s); err != nil {
			t.Fatal(err)
		}

		r.publish(event("acme", "e-1"))
		for range 10 {
			if len(r.sink.got()) == 1 && len(keyed.got()) == 1 {
				break
			}
			r.step()
		}
		for _, c := range []struct {
			sub, secretHeader, secret string
			sink                      *sink
		}{
			{r.sub.ID, "Authorization", "Bearer sink-token", r.sink},
			{"sub_keyed", "X-Api-Key", "k-secret", keyed},
		} {
			got := c.sink.got()
			if len(got) != 1 {
				t.Fatalf("%s: the receiver got %d requests, want 1", c.sub, len(got))
			}
			jobs, err := r.store.ListJobs(r.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: c.sub, Limit: 10})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("%s: jobs %+v, %v", c.sub, jobs, err)
			}
			_, as, err := r.store.GetJob(r.ctx, "acme", jobs[0].ID)
			if err != nil || len(as) != 1 {
				t.Fatalf("%s: attempts %+v, %v", c.sub, as, err)
			}
			a := as[0]

			received := got[0].header
			if v := received.Get(c.secretHeader); v != c.secret {
				t.Fatalf("%s: the receiver got %s %q, want the credential", c.sub, c.secretHeader, v)
			}
			want := map[string]string{}
			for k, vs := range received {
				want[k] = strings.Join(vs, ", ")
			}
			want[http.CanonicalHeaderKey(c.secretHeader)] = hub.Redacted
			// Names as written on the wire (ce-id, webhook-signature);
			// the receiver's server shows them in canonical form.
			logged := map[string]string{}
			for k, v := range a.RequestHeaders {
				logged[http.CanonicalHeaderKey(k)] = v
			}
			if !maps.Equal(logged, want) {
				t.Errorf("%s: logged request headers\n %v\nwant what the receiver got, the credential redacted:\n %v", c.sub, logged, want)
			}
			for _, h := range []string{"Webhook-Signature", "Webhook-Id", "X-Lerian-Delivery-Id", "Content-Type"} {
				if logged[h] == "" || logged[h] != received.Get(h) {
					t.Errorf("%s: logged %s = %q, the receiver got %q", c.sub, h, logged[h], received.Get(h))
				}
			}
			if logged["X-Lerian-Delivery-Id"] != a.ID {
				t.Errorf("%s: X-Lerian-Delivery-Id %q is not the attempt's id %q", c.sub, logged["X-Lerian-Delivery-Id"], a.ID)
			}

			resp := a.ResponseHeaders
			if resp["X-Receiver"] != "r1" || resp["Set-Cookie"] != "a=1, b=2" || resp["X-Long"] != strings.Repeat("x", hub.MaxResponseHeaderValue) {
				t.Errorf("%s: logged response headers %v", c.sub, resp)
			}
			if len(resp) != hub.MaxResponseHeaders {
				t.Errorf("%s: %d response headers logged, want the first %d by name", c.sub, len(resp), hub.MaxResponseHeaders)
			}
		}
	})
}
