package console

import (
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// The form reads the one notation, type@major, and type:major as the CLI
// used to write it; a type alone is major 1.
func TestSubscriptionRequest_ReadsBothNotationsOfAVersionedType(t *testing.T) {
	form := url.Values{"name": {"n"}, "destination_type": {"webhook"}, "url": {"https://e.com/hook"},
		"event_type": {"transaction.posted@1"}, "other_types": {"account.created@2, account.closed:3, balance.updated"}}
	r := httptest.NewRequest("POST", "/console/subscriptions/new", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if err := r.ParseForm(); err != nil {
		t.Fatal(err)
	}
	got := subscriptionRequest(r, true)["event_types"]
	want := []m{{"type": "transaction.posted", "schema_major": 1}, {"type": "account.created", "schema_major": 2},
		{"type": "account.closed", "schema_major": 3}, {"type": "balance.updated", "schema_major": 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("event_types = %v, want %v", got, want)
	}
}
