package hub

import (
	"strings"
	"testing"
)

// Pub/Sub project and topic IDs follow Google's rules; each refusal names
// its field.
func TestValidatePubSub_ProjectAndTopicRules(t *testing.T) {
	const sa = `{"type":"service_account"}` // refused later: the names come first
	for _, c := range []struct {
		d    Destination
		want string
	}{
		{Destination{Project: "", Topic: "events"}, "destination.project: required"},
		{Destination{Project: "acme", Topic: "events"}, "destination.project: \"acme\" is not a project ID"},
		{Destination{Project: "1acme-prod", Topic: "events"}, "destination.project"},
		{Destination{Project: "acme-prod-", Topic: "events"}, "destination.project"},
		{Destination{Project: "Acme-Prod", Topic: "events"}, "destination.project"},
		{Destination{Project: strings.Repeat("a", 31), Topic: "ev"}, "destination.project"},
		{Destination{Project: "acme-prod", Topic: ""}, "destination.topic: required"},
		{Destination{Project: "acme-prod", Topic: "ev"}, "destination.topic"},
		{Destination{Project: "acme-prod", Topic: "1events"}, "destination.topic"},
		{Destination{Project: "acme-prod", Topic: "google-events"}, "not with goog"},
		{Destination{Project: "acme-prod", Topic: "ev ents"}, "destination.topic"},
		{Destination{Project: "acme-prod", Topic: "projects/p/topics/t"}, "the topic's ID, not its full name"},
		{Destination{Project: "acme-prod", Topic: "events"}, "destination.credentials: client_email is required"},
		{Destination{Project: "example.com:acme-prod", Topic: "a.b_c~d%e+f-g"}, "destination.credentials"},
	} {
		err := ValidatePubSub(c.d, sa)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.d, err, c.want)
		}
	}
	for sa, want := range map[string]string{
		"":                            "destination.credentials: required",
		"nope":                        "not a service account key",
		`{"type":"external_account"}`: "type must be service_account",
		`{"type":"authorized_user"}`:  "type must be service_account",
		`{"type":"service_account","client_email":"a@b"}`:                                          "private_key is not a PEM key",
		`{"type":"service_account","client_email":"a@b","token_uri":"https://evil.example/token"}`: "token_uri",
		`{"type":"service_account","client_email":"a@b","universe_domain":"evil.example"}`:         "universe_domain",
	} {
		err := ValidatePubSub(Destination{Project: "acme-prod", Topic: "events"}, sa)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", sa, err, want)
		}
	}
}
