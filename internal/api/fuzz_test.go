package api

import (
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
)

// FuzzSubscriptionRequest feeds arbitrary bodies through what create and
// PATCH do with them (strict decoding, applying, validating): it must never
// panic, and whatever it accepts must be a valid subscription.
//
//	go test ./api -run '^$' -fuzz FuzzSubscriptionRequest -fuzztime 30s
func FuzzSubscriptionRequest(f *testing.F) {
	f.Add([]byte(`{"name":"ledger-hooks","event_types":[{"type":"transaction.posted","schema_major":1}],
		"destination":{"type":"webhook","url":"https://example.com/hook","headers":{"X-Custom":"v"},
		"auth":{"type":"bearer","token":"t"}},"retry_schedule":["5s","1m"],"max_in_flight":1,"enabled":true}`))
	f.Add([]byte(`{"destination":{"auth":null},"retry_schedule":null}`))
	f.Add([]byte(`{"destination":{"auth":{"type":"header","name":"X-K","value":"v"}}}`))
	f.Add([]byte(`{"event_types":[{"type":"a.b","schema_major":-1}],"max_in_flight":1e9}`))
	f.Add([]byte(`{"filters":[{"exact":{"subject":"a"}},{"any":[{"not":{"prefix":{"resourcetype":"x"}}}]}]}`))
	f.Add([]byte(`{"filters":null}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req subscriptionRequest
		if err := decodeJSON(body, &req); err != nil {
			if hub.ErrorCode(err) != hub.EINVALID {
				t.Fatalf("decoding error without a code: %v", err)
			}
			return
		}
		base := hub.Subscription{
			Name: "n", EventTypes: []hub.EventTypeRef{{Type: "a.b", SchemaMajor: 1}},
			Destination: hub.Destination{Type: "webhook", URL: "https://example.com"}, MaxInFlight: 1,
		}
		sec := hub.SubscriptionSecrets{}
		if _, err := req.apply(&base, &sec, false); err != nil {
			if hub.ErrorCode(err) != hub.EINVALID {
				t.Fatalf("validation error without a code: %v", err)
			}
			return
		}
		if err := validateSubscription(base, sec, false); err != nil {
			t.Fatalf("accepted, yet invalid: %v", err)
		}
	})
}
