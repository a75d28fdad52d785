package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/pubsub"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A Pub/Sub destination's service account key is sealed: no answer shows
// it and the stored row holds it only sealed; the verification probe
// publishes hub.verification to the topic and passes on its message ID;
// a topic that does not exist fails it, naming the topic.
func TestSubscriptions_PubSubCredentialsAreSealedAndVerifyPublishes(t *testing.T) {
	testkit.Long(t)
	ps := testkit.NewPubSub(t)
	ps.CreateTopic(t, "acme-events", "events")
	pub, err := pubsub.New(pubsub.Options{ClientOptions: ps.ClientOptions(), Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	key := testkit.ServiceAccountJSON(t, "acme-events")
	var parsed map[string]string
	if err := json.Unmarshal([]byte(key), &parsed); err != nil {
		t.Fatal(err)
	}
	privateKey := parsed["private_key"][40:80] // a piece of the key's body
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{drivers: map[string]destination.Driver{hub.DestinationPubSub: pub}})
		acme := h.tenant("acme")
		var created struct {
			ID          string         `json:"id"`
			Destination map[string]any `json:"destination"`
		}
		// The key as a JSON object.
		acme.json("POST", "/v1/subscriptions", `{"name":"pubsub","event_types":[{"type":"transaction.posted","schema_major":1}],
		 "destination":{"type":"pubsub","project":"acme-events","topic":"events","credentials":`+key+`}}`, 201, &created)
		if created.Destination["project"] != "acme-events" || created.Destination["topic"] != "events" ||
			created.Destination["type"] != "pubsub" || created.Destination["credentials"] != nil {
			t.Fatalf("created destination %v", created.Destination)
		}
		for _, path := range []string{"/v1/subscriptions/" + created.ID, "/v1/subscriptions"} {
			_, _, body := acme.do("GET", path, "")
			if strings.Contains(string(body), privateKey) || strings.Contains(string(body), "private_key") || strings.Contains(string(body), "iam.gserviceaccount.com") {
				t.Fatalf("GET %s shows the service account: %s", path, body)
			}
		}
		stored, err := h.store.GetSubscription(context.Background(), "acme", created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(stored.Secrets, []byte("private_key")) || bytes.Contains(stored.Secrets, []byte(privateKey)) || stored.Destination.Project != "acme-events" {
			t.Fatalf("stored in the clear, or without its project: %+v", stored.Destination)
		}

		var verified struct {
			VerificationState string `json:"verification_state"`
		}
		acme.json("POST", "/v1/subscriptions/"+created.ID+"/verify", "", 200, &verified)
		if verified.VerificationState != "active" {
			t.Fatalf("after verify: %s", verified.VerificationState)
		}
		var tested struct {
			Error *string `json:"error"`
		}
		acme.json("POST", "/v1/subscriptions/"+created.ID+"/test", `{"type":"transaction.posted"}`, 200, &tested)
		if tested.Error != nil {
			t.Fatalf("test event: %s", *tested.Error)
		}
		var probe, test bool
		for _, m := range ps.Messages("acme-events", "events") {
			if m.OrderingKey != "acme" {
				continue
			}
			probe = probe || (m.Attributes["X-Lerian-Event-Type"] == "hub.verification" && m.Attributes["webhook-signature"] != "" &&
				strings.Contains(string(m.Data), created.ID))
			test = test || m.Attributes["X-Lerian-Test"] == "true"
		}
		if !probe || !test {
			t.Fatalf("on the topic: verification %v, test event %v", probe, test)
		}

		// A topic that does not exist fails the probe; the PATCH (the key
		// now as a string) set verification back to pending.
		var patched struct {
			VerificationState string `json:"verification_state"`
		}
		quoted, _ := json.Marshal(key)
		acme.json("PATCH", "/v1/subscriptions/"+created.ID, `{"destination":{"topic":"missing","credentials":`+string(quoted)+`}}`, 200, &patched)
		if patched.VerificationState != "pending" {
			t.Fatalf("after moving the topic: %s", patched.VerificationState)
		}
		status, _, body := acme.do("POST", "/v1/subscriptions/"+created.ID+"/verify", "")
		if status != 422 || !strings.Contains(string(body), `topic \"projects/acme-events/topics/missing\" does not exist`) {
			t.Fatalf("verify to a missing topic: %d %s", status, body)
		}
		if strings.Contains(string(body), privateKey) {
			t.Fatalf("the answer shows the key: %s", body)
		}
	})
}

func TestSubscriptions_PubSubValidationNamesTheField(t *testing.T) {
	testkit.Long(t)
	const types = `"name":"n","event_types":[{"type":"a.b","schema_major":1}]`
	key := testkit.ServiceAccountJSON(t, "acme-events")
	dest := func(d string) string { return `{` + types + `,"destination":{"type":"pubsub",` + d + `}}` }
	cases := map[string]string{
		dest(`"topic":"events","credentials":` + key):                                                                                                         "destination.project: required",
		dest(`"project":"Acme","topic":"events","credentials":` + key):                                                                                        "destination.project: \"Acme\" is not a project ID",
		dest(`"project":"acme-events","credentials":` + key):                                                                                                  "destination.topic: required",
		dest(`"project":"acme-events","topic":"goog-x","credentials":` + key):                                                                                 "destination.topic",
		dest(`"project":"acme-events","topic":"projects/a/topics/b","credentials":` + key):                                                                    "destination.topic: the topic's ID",
		dest(`"project":"acme-events","topic":"events"`):                                                                                                      "destination.credentials: required",
		dest(`"project":"acme-events","topic":"events","credentials":12`):                                                                                     "destination.credentials: a service account key",
		dest(`"project":"acme-events","topic":"events","credentials":{"type":"external_account"}`):                                                            "destination.credentials: type must be service_account",
		dest(`"project":"acme-events","topic":"events","credentials":` + strings.Replace(key, "https://oauth2.googleapis.com/token", "http://10.0.0.1/t", 1)): "destination.credentials: token_uri",
		dest(`"project":"acme-events","topic":"events","url":"https://e.com","credentials":` + key):                                                           "destination: url, exchange, routing_key, brokers, tls, sasl, subject and stream are not for pubsub",
		dest(`"project":"acme-events","topic":"events","headers":{"X-A":"b"},"credentials":` + key):                                                           "destination.headers: only for webhook destinations",
		`{` + types + `,"destination":{"type":"kafka","brokers":["k.example.com:9093"],"topic":"t","tls":true,"project":"acme-events"}}`:                      "destination.project: only for pubsub destinations",
		`{` + types + `,"destination":{"url":"https://e.com","credentials":` + key + `}}`:                                                                     "destination.credentials: only for pubsub destinations",
	}
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		for body, want := range cases {
			wantInvalid(t, acme, "POST", "/v1/subscriptions", body, want)
		}
		// Nothing private to allow: a Pub/Sub destination is fine on a hub
		// that allows no private sinks.
		acme.json("POST", "/v1/subscriptions", dest(`"project":"acme-events","topic":"events","credentials":`+key), 201, nil)
	})
}
