package api_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/nats"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A NATS destination's credentials (the URL's userinfo) are sealed: no
// answer shows them and the stored row holds them only sealed; the
// verification probe publishes hub.verification to the subject and
// passes on the stream's ack; a stream that does not exist fails it.
func TestSubscriptions_NATSCredentialsAreSealedAndVerifyPublishes(t *testing.T) {
	testkit.Long(t)
	n := testkit.NewNATS(t, "hub", "n4ts-s3cret")
	n.CreateStream(t, "EVENTS", "events.>")
	dialer := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	pub, err := nats.New(nats.Options{Dial: dialer.DialContext})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	withCreds := strings.Replace(n.URL, "nats://", "nats://hub:n4ts-s3cret@", 1)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true, drivers: map[string]destination.Driver{hub.DestinationNATS: pub}})
		acme := h.tenant("acme")
		var created struct {
			ID          string         `json:"id"`
			Destination map[string]any `json:"destination"`
		}
		subject := "events." + testkit.UniqueName()
		acme.json("POST", "/v1/subscriptions", `{"name":"nats","event_types":[{"type":"transaction.posted","schema_major":1}],
		 "destination":{"type":"nats","url":"`+withCreds+`","subject":"`+subject+`","stream":"EVENTS"}}`, 201, &created)
		if created.Destination["url"] != n.URL || created.Destination["subject"] != subject ||
			created.Destination["stream"] != "EVENTS" || created.Destination["type"] != "nats" {
			t.Fatalf("created destination %v", created.Destination)
		}
		for _, path := range []string{"/v1/subscriptions/" + created.ID, "/v1/subscriptions"} {
			_, _, body := acme.do("GET", path, "")
			if strings.Contains(string(body), "n4ts-s3cret") || strings.Contains(string(body), "hub:") || strings.Contains(string(body), "@") {
				t.Fatalf("GET %s shows the server's credentials: %s", path, body)
			}
		}
		stored, err := h.store.GetSubscription(context.Background(), "acme", created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stored.Destination.URL, "@") || bytes.Contains(stored.Secrets, []byte("n4ts-s3cret")) {
			t.Fatalf("stored in the clear: url %q", stored.Destination.URL)
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
		for _, m := range n.Messages(t, "EVENTS") {
			if m.Subject != subject {
				continue
			}
			probe = probe || (m.Header.Get("X-Lerian-Event-Type") == "hub.verification" && m.Header.Get("webhook-signature") != "" &&
				strings.Contains(string(m.Data), created.ID) && m.Header.Get("Nats-Msg-Id") != "")
			test = test || m.Header.Get("X-Lerian-Test") == "true"
		}
		if !probe || !test {
			t.Fatalf("in the stream: verification %v, test event %v", probe, test)
		}

		// A stream that does not exist fails the probe.
		acme.json("PATCH", "/v1/subscriptions/"+created.ID, `{"destination":{"stream":"MISSING"}}`, 200, nil)
		status, _, body := acme.do("POST", "/v1/subscriptions/"+created.ID+"/verify", "")
		if status != 422 || !strings.Contains(string(body), `stream \"MISSING\" does not exist`) {
			t.Fatalf("verify to a missing stream: %d %s", status, body)
		}
		if strings.Contains(string(body), "n4ts-s3cret") {
			t.Fatalf("the answer shows the password: %s", body)
		}
	})
}

func TestSubscriptions_NATSValidationNamesTheField(t *testing.T) {
	testkit.Long(t)
	const types = `"name":"n","event_types":[{"type":"a.b","schema_major":1}]`
	dest := func(d string) string { return `{` + types + `,"destination":{"type":"nats",` + d + `}}` }
	public := map[string]string{ // private sinks not allowed
		dest(`"url":"tls://u:p@10.1.2.3:4222","subject":"a.b"`):                                           "destination.url: private destinations are not allowed",
		dest(`"url":"tls://localhost:4222","subject":"a.b"`):                                              "destination.url: private destinations are not allowed",
		dest(`"url":"nats://n.example.com:4222","subject":"a.b"`):                                         "destination.url: must be tls://",
		dest(`"url":"https://n.example.com","subject":"a.b"`):                                             "destination.url: must be a nats:// or tls://",
		dest(`"url":"amqps://n.example.com","subject":"a.b"`):                                             "destination.url: must be a nats:// or tls://",
		dest(`"subject":"a.b"`):                                                                           "destination.url: required",
		dest(`"url":"tls://n.example.com/x","subject":"a.b"`):                                             "destination.url: must not have a path",
		dest(`"url":"tls://n.example.com"`):                                                               "destination.subject: required",
		dest(`"url":"tls://n.example.com","subject":"a.*"`):                                               "destination.subject: wildcards",
		dest(`"url":"tls://n.example.com","subject":"a.>"`):                                               "destination.subject: wildcards",
		dest(`"url":"tls://n.example.com","subject":"a b"`):                                               "destination.subject: must not contain spaces",
		dest(`"url":"tls://n.example.com","subject":"a..b"`):                                              "destination.subject",
		dest(`"url":"tls://n.example.com","subject":"a","stream":"x.y"`):                                  "destination.stream",
		dest(`"url":"tls://n.example.com","subject":"a","topic":"t"`):                                     "destination: exchange, routing_key, brokers, topic, tls and sasl are not for nats",
		dest(`"url":"tls://n.example.com","subject":"a","headers":{"X-A":"b"}`):                           "destination.headers: only for webhook destinations",
		`{` + types + `,"destination":{"type":"rabbitmq","url":"amqps://mq.example.com/","subject":"a"}}`: "destination: subject and stream are for nats",
		`{` + types + `,"destination":{"url":"https://e.com","subject":"a"}}`:                             "destination: exchange, routing_key, brokers, topic, tls, sasl, subject and stream are for",
	}
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		for body, want := range public {
			wantInvalid(t, acme, "POST", "/v1/subscriptions", body, want)
		}
		// A private server is fine where private sinks are allowed.
		hp := newHubAPI(t, d, apiOptions{allowPrivate: true})
		hp.tenant("acme").json("POST", "/v1/subscriptions", dest(`"url":"nats://127.0.0.1:4222","subject":"a.b"`), 201, nil)
	})
}
