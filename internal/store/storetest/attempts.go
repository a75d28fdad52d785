package storetest

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func testAttempts(t *testing.T, open Opener) {
	t.Run("HeadersRoundTrip", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 5)
		e.publish(t, "acme", "e", 3)
		cs := e.claim(t, 3)
		sort.Slice(cs, func(i, j int) bool { return cs[i].Job.EventSequence < cs[j].Job.EventSequence })

		sent := map[string]string{"Content-Type": "application/json", "Webhook-Signature": "v1,abc=",
			"Authorization": hub.Redacted, "X-Lerian-Tenant-Id": "acme"}
		answer := map[string]string{"X-Receiver": "r1", "Set-Cookie": "a=1, b=2"}
		withHeaders := e.succeeded(cs[0])
		withHeaders.Attempt.RequestHeaders, withHeaders.Attempt.ResponseHeaders = sent, answer

		// What a receiver can put in its headers is bounded and cleaned
		// by the store too: 40 headers keep the first 32 by name, a long value is cut, a
		// NUL or invalid byte is made storable.
		flood := map[string]string{"X-Bad": "a\x00b\xffc", "X-Long": strings.Repeat("é", 300)}
		for i := range 38 {
			flood[fmt.Sprintf("X-Z%02d", i)] = "v"
		}
		bounded := e.succeeded(cs[1])
		bounded.Attempt.ResponseHeaders = flood
		none := e.succeeded(cs[2]) // a broker's, or an attempt from before: none
		e.complete(t, withHeaders, bounded, none)

		_, as := e.job(t, "acme", cs[0].Job.ID)
		if len(as) != 1 || !maps.Equal(as[0].RequestHeaders, sent) || !maps.Equal(as[0].ResponseHeaders, answer) {
			t.Fatalf("attempt headers = %v / %v, want %v / %v", as[0].RequestHeaders, as[0].ResponseHeaders, sent, answer)
		}
		_, as = e.job(t, "acme", cs[1].Job.ID)
		got := as[0].ResponseHeaders
		if len(got) != hub.MaxResponseHeaders || got["X-Bad"] != "a\uFFFDb\uFFFDc" || len(got["X-Long"]) > hub.MaxResponseHeaderValue ||
			!strings.HasPrefix(got["X-Long"], "éé") || as[0].RequestHeaders != nil {
			t.Fatalf("bounded headers: %d kept, X-Bad %q, X-Long %d bytes, request %v", len(got), got["X-Bad"], len(got["X-Long"]), as[0].RequestHeaders)
		}
		_, as = e.job(t, "acme", cs[2].Job.ID)
		if as[0].RequestHeaders != nil || as[0].ResponseHeaders != nil {
			t.Fatalf("an attempt without headers reads %v / %v, want nil", as[0].RequestHeaders, as[0].ResponseHeaders)
		}
	})
}
