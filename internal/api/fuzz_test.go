package api

import (
	"bytes"
	"encoding/json"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
)

// FuzzSubscriptionRequest feeds arbitrary bodies through what create and
// PATCH do with them (strict decoding, applying, validating): it must never
// panic, whatever it accepts must be a valid subscription, and neither what
// it keeps nor what it answers holds a U+FFFD the body did not send
// (docs/security.md: invalid UTF-8 is refused, never replaced).
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
	// Invalid UTF-8 in every kind of string, and keys given twice.
	f.Add([]byte("{\"name\":\"a\xffb\"}"))
	f.Add([]byte("{\"destination\":{\"headers\":{\"X-A\":\"v\xc3\"}}}"))
	f.Add([]byte("{\"destination\":{\"headers\":{\"X-\xfe\":\"v\"}}}"))
	f.Add([]byte("{\"destination\":{\"auth\":{\"type\":\"basic\",\"username\":\"u\",\"password\":\"\xed\xa0\x80\"}}}"))
	f.Add([]byte("{\"filters\":[{\"prefix\":{\"subject\":\"\xf0\x9f\"}}]}"))
	f.Add([]byte(`{"name":"\ud800","retry_schedule":["\udc00s"]}`))
	f.Add([]byte(`{"name":"ok \ufffd sent as such"}`))
	f.Add([]byte(`{"name":"a","name":"b"}`))
	f.Add([]byte(`{"destination":{"headers":{"X-A":"1","X-A":"2"}}}`))
	f.Add([]byte(`{"filters":[{"exact":{"subject":"a","subject":"b"}}]}`))
	f.Add([]byte(`{"filters":[{"any":[{"exact":{"type":"a"}},{"exact":{"type":"b"}}],"any":[]}]}`))
	f.Add([]byte(`{"rate_limit":{"per_second":1,"per_second":2}}`))
	f.Add([]byte(`{"destination":{"type":"pubsub","project":"acme-events","topic":"events","credentials":{"type":"service_account","client_email":"a@b"}}}`))
	f.Add([]byte("{\"destination\":{\"type\":\"pubsub\",\"project\":\"acme-events\",\"topic\":\"events\",\"credentials\":\"{\\\"type\\\":\\\"s\xff\\\"}\"}}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		sent := hasReplacement(body)
		var req subscriptionRequest
		if err := decodeJSON(body, &req); err != nil {
			if code := hub.ErrorCode(err); code != hub.EINVALID && code != hub.EINVALIDREQUEST {
				t.Fatalf("decoding error without a code: %v", err)
			}
			if !sent && hasReplacement([]byte(hub.ErrorMessage(err))) {
				t.Fatalf("the answer holds a U+FFFD the body did not send: %q", hub.ErrorMessage(err))
			}
			return
		}
		base := hub.Subscription{
			Name: "n", EventTypes: []hub.EventTypeRef{{Type: "a.b", SchemaMajor: 1}},
			Destination: hub.Destination{Type: "webhook", URL: "https://example.com"}, MaxInFlight: 1,
		}
		sec := hub.SubscriptionSecrets{}
		if _, err := req.apply(&base, &sec, reach{}); err != nil {
			if code := hub.ErrorCode(err); code != hub.EINVALID && code != hub.EINVALIDREQUEST {
				t.Fatalf("validation error without a code: %v", err)
			}
			if !sent && hasReplacement([]byte(hub.ErrorMessage(err))) {
				t.Fatalf("the answer holds a U+FFFD the body did not send: %q", hub.ErrorMessage(err))
			}
			return
		}
		if err := validateSubscription(base, sec, reach{}); err != nil {
			t.Fatalf("accepted, yet invalid: %v", err)
		}
		kept, err := json.Marshal(struct {
			Sub     hub.Subscription
			Secrets hub.SubscriptionSecrets
			Answer  subscriptionJSON
		}{base, sec, (&Server{}).toSubscriptionJSON(base)})
		if err != nil {
			t.Fatalf("marshalling what was accepted: %v", err)
		}
		if !sent && hasReplacement(kept) {
			t.Fatalf("accepted %q and kept a U+FFFD it did not send: %s", body, kept)
		}
	})
}

// hasReplacement reports whether b holds U+FFFD, as UTF-8 or as a JSON
// escape (encoding/json writes invalid bytes as \ufffd).
func hasReplacement(b []byte) bool {
	return bytes.Contains(b, []byte("\uFFFD")) || bytes.Contains(bytes.ToLower(b), []byte(`\ufffd`))
}
