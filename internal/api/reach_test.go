package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/destination/kafka"
	"github.com/lerianstudio/streaming-hub/internal/destination/rabbitmq"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

const rateLimitedSub = `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://example.com/hook"},
 "rate_limit":{"per_second":50}}`

func TestSubscriptions_RateLimitIsShownPatchedAndCleared(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		var got struct {
			ID        string          `json:"id"`
			RateLimit json.RawMessage `json:"rate_limit"`
		}
		acme.json("POST", "/v1/subscriptions", rateLimitedSub, 201, &got)
		if string(got.RateLimit) != `{"per_second":50}` {
			t.Fatalf("created rate_limit %s", got.RateLimit)
		}
		acme.json("PATCH", "/v1/subscriptions/"+got.ID, `{"rate_limit":{"per_second":10000}}`, 200, &got)
		acme.json("GET", "/v1/subscriptions/"+got.ID, "", 200, &got)
		if string(got.RateLimit) != `{"per_second":10000}` {
			t.Fatalf("patched rate_limit %s", got.RateLimit)
		}
		acme.json("PATCH", "/v1/subscriptions/"+got.ID, `{"name":"renamed"}`, 200, &got)
		if string(got.RateLimit) != `{"per_second":10000}` {
			t.Fatalf("a PATCH without rate_limit changed it to %s", got.RateLimit)
		}
		acme.json("PATCH", "/v1/subscriptions/"+got.ID, `{"rate_limit":null}`, 200, &got)
		acme.json("GET", "/v1/subscriptions/"+got.ID, "", 200, &got)
		if string(got.RateLimit) != `null` {
			t.Fatalf("cleared rate_limit %s", got.RateLimit)
		}

		for value, want := range map[string]string{
			`{"per_second":0}`:           "rate_limit.per_second: must be 1 to 10000",
			`{"per_second":10001}`:       "rate_limit.per_second: must be 1 to 10000",
			`{"per_second":-3}`:          "rate_limit.per_second: must be 1 to 10000",
			`{}`:                         "rate_limit.per_second: required",
			`{"per_second":"5"}`:         "rate_limit",
			`{"per_second":5,"burst":9}`: `rate_limit: unknown field "burst"`,
			`5`:                          "rate_limit",
		} {
			create := `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://example.com/hook"},"rate_limit":` + value + `}`
			wantInvalid(t, acme, "POST", "/v1/subscriptions", create, want)
			wantInvalid(t, acme, "PATCH", "/v1/subscriptions/"+got.ID, `{"rate_limit":`+value+`}`, want)
		}
	})
}

// wantInvalid checks that a request is refused with 400 invalid naming want.
func wantInvalid(t *testing.T, c client, method, path, body, want string) {
	t.Helper()
	status, _, answer := c.do(method, path, body)
	var e struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal(answer, &e)
	if status != 400 || e.Error.Code != "invalid" || !strings.Contains(e.Error.Message, want) {
		t.Errorf("%s %s %.200s\n got %d %s\nwant 400 naming %q", method, path, body, status, answer, want)
	}
}

func rabbitSub(url, exchange string) string {
	return `{"name":"mq","event_types":[{"type":"transaction.posted","schema_major":1}],
	 "destination":{"type":"rabbitmq","url":"` + url + `","exchange":"` + exchange + `","routing_key":"{tenant}.{type}"}}`
}

// A RabbitMQ destination's credentials (the URL's userinfo) are sealed:
// no answer shows them, the stored row holds them only sealed, and the
// verification probe publishes through them and passes on the confirm.
func TestSubscriptions_RabbitMQCredentialsAreSealedAndVerifyPublishes(t *testing.T) {
	testkit.Long(t)
	mq := testkit.NewRabbit(t, "#")
	dialer := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	pub, err := rabbitmq.New(rabbitmq.Options{Dial: dialer.DialContext, Name: "api-test-" + testkit.UniqueName()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	u, _ := url.Parse(mq.URL)
	pass, _ := u.User.Password()
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true, drivers: map[string]destination.Driver{hub.DestinationRabbitMQ: pub}})
		acme := h.tenant("acme")
		var created struct {
			ID          string         `json:"id"`
			Destination map[string]any `json:"destination"`
		}
		acme.json("POST", "/v1/subscriptions", rabbitSub(mq.URL, mq.Exchange), 201, &created)
		bare := *u
		bare.User = nil
		if created.Destination["url"] != bare.String() || created.Destination["exchange"] != mq.Exchange ||
			created.Destination["routing_key"] != "{tenant}.{type}" || created.Destination["type"] != "rabbitmq" {
			t.Fatalf("created destination %v", created.Destination)
		}
		for _, path := range []string{"/v1/subscriptions/" + created.ID, "/v1/subscriptions"} {
			_, _, body := acme.do("GET", path, "")
			if strings.Contains(string(body), u.User.String()) || strings.Contains(string(body), `"`+pass+`"`) || strings.Contains(string(body), "@") {
				t.Fatalf("GET %s shows the broker's credentials: %s", path, body)
			}
		}
		stored, err := h.store.GetSubscription(context.Background(), "acme", created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stored.Destination.URL, "@") || bytes.Contains(stored.Secrets, []byte(pass)) {
			t.Fatalf("stored in the clear: url %q", stored.Destination.URL)
		}

		var verified struct {
			VerificationState string `json:"verification_state"`
		}
		acme.json("POST", "/v1/subscriptions/"+created.ID+"/verify", "", 200, &verified)
		if verified.VerificationState != "active" {
			t.Fatalf("after verify: %s", verified.VerificationState)
		}
		var probe []byte
		testkit.WaitFor(t, "the verification message in the queue", func() bool {
			for _, m := range mq.Take(t) {
				if m.Type == "hub.verification" && m.Headers["X-Lerian-Event-Type"] == "hub.verification" && m.Headers["webhook-signature"] != nil {
					probe = m.Body
				}
			}
			return probe != nil
		})
		if !strings.Contains(string(probe), `"challenge"`) || !strings.Contains(string(probe), created.ID) {
			t.Fatalf("verification message %s", probe)
		}

		// A test event is published the same way (X-Lerian-Test), its
		// outcome the broker's confirm.
		var tested struct {
			Error *string `json:"error"`
		}
		acme.json("POST", "/v1/subscriptions/"+created.ID+"/test", `{"type":"transaction.posted"}`, 200, &tested)
		if tested.Error != nil {
			t.Fatalf("test event: %s", *tested.Error)
		}
		testkit.WaitFor(t, "the test event in the queue", func() bool {
			for _, m := range mq.Take(t) {
				if m.Headers["X-Lerian-Test"] == "true" && m.RoutingKey == "acme.transaction.posted" {
					return true
				}
			}
			return false
		})

		// An exchange that does not exist fails the probe: the broker
		// never confirmed.
		acme.json("PATCH", "/v1/subscriptions/"+created.ID, `{"destination":{"exchange":"test.none.`+testkit.UniqueName()+`"}}`, 200, nil)
		status, _, body := acme.do("POST", "/v1/subscriptions/"+created.ID+"/verify", "")
		if status != 422 || !strings.Contains(string(body), "404") {
			t.Fatalf("verify to a missing exchange: %d %s", status, body)
		}
	})
}

func TestSubscriptions_BrokerValidationNamesTheField(t *testing.T) {
	testkit.Long(t)
	const types = `"name":"n","event_types":[{"type":"a.b","schema_major":1}]`
	mq := func(dest string) string { return `{` + types + `,"destination":{"type":"rabbitmq",` + dest + `}}` }
	kafka := func(dest string) string { return `{` + types + `,"destination":{"type":"kafka",` + dest + `}}` }
	public := map[string]string{ // private sinks not allowed
		mq(`"url":"amqps://u:p@10.1.2.3:5671/","exchange":"x"`):                       "destination.url: private destinations are not allowed",
		mq(`"url":"amqps://u:p@localhost/","exchange":"x"`):                           "destination.url: private destinations are not allowed",
		mq(`"url":"amqp://u:p@mq.example.com/","exchange":"x"`):                       "destination.url: must be amqps",
		kafka(`"brokers":["127.0.0.1:9093"],"topic":"t","tls":true`):                  "destination.brokers[0]: private destinations are not allowed",
		kafka(`"brokers":["k.example.com:9093","[::1]:9093"],"topic":"t","tls":true`): "destination.brokers[1]: private destinations are not allowed",
		kafka(`"brokers":["k.example.com:9093"],"topic":"t"`):                         "destination.tls: must be true",
		mq(`"url":"https://mq.example.com/","exchange":"x"`):                          "destination.url: must be an amqp(s)",
		mq(`"exchange":"x"`): "destination.url: required",
		mq(`"url":"amqps://mq.example.com/?heartbeat=1","exchange":"x"`):                                                             "destination.url: must not have a query",
		mq(`"url":"amqps://mq.example.com/","routing_key":"{type}.{subject}"`):                                                       "destination.routing_key: unknown placeholder {subject}",
		mq(`"url":"amqps://mq.example.com/","headers":{"X-A":"b"}`):                                                                  "destination.headers: only for webhook destinations",
		mq(`"url":"amqps://mq.example.com/","auth":{"type":"bearer","token":"t"}`):                                                   "destination.auth: only for webhook destinations",
		mq(`"url":"amqps://mq.example.com/","topic":"t"`):                                                                            "destination: brokers, topic, tls and sasl are for kafka",
		kafka(`"topic":"t","tls":true`):                                                                                              "destination.brokers: 1 to 16",
		kafka(`"brokers":["k.example.com"],"topic":"t","tls":true`):                                                                  `destination.brokers[0]: "k.example.com" must be host:port`,
		kafka(`"brokers":["k.example.com:9093"],"tls":true`):                                                                         "destination.topic: required",
		kafka(`"brokers":["k.example.com:9093"],"topic":"a/b","tls":true`):                                                           "destination.topic",
		kafka(`"brokers":["k.example.com:9093"],"topic":"t","tls":true,"url":"https://x.example.com"}`):                              "destination: url, exchange, routing_key, subject and stream are not for kafka",
		kafka(`"brokers":["k.example.com:9093"],"topic":"t","tls":true,"sasl":{"mechanism":"GSSAPI","username":"u","password":"p"}`): "destination.sasl.mechanism: must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
		kafka(`"brokers":["k.example.com:9093"],"topic":"t","tls":true,"sasl":{"mechanism":"SCRAM-SHA-512","username":"u"}`):         "destination.sasl: username and password are required",
		kafka(`"brokers":["k.example.com:9093"],"topic":"t","tls":true,"sasl":{"mechanism":"PLAIN","user":"u"}`):                     `destination.sasl: unknown field "user"`,
		`{` + types + `,"destination":{"type":"sqs","url":"https://e.com"}}`:                                                         "destination.type: must be webhook, rabbitmq, kafka, nats, pubsub, aws_sqs, aws_sns, aws_eventbridge or aws_kinesis",
		`{` + types + `,"destination":{"url":"https://e.com","exchange":"x"}}`:                                                       "destination: exchange, routing_key, brokers, topic, tls, sasl, subject and stream are for rabbitmq, kafka and nats",
	}
	private := map[string]string{ // private sinks allowed
		kafka(`"brokers":["127.0.0.1:9093"],"topic":"t","sasl":{"mechanism":"PLAIN","username":"u","password":"p"}`): "destination.sasl.mechanism: PLAIN sends the password as is: it needs tls true",
	}
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		for allow, cases := range map[bool]map[string]string{false: public, true: private} {
			h := newHubAPI(t, d, apiOptions{allowPrivate: allow})
			acme := h.tenant("acme")
			for body, want := range cases {
				wantInvalid(t, acme, "POST", "/v1/subscriptions", body, want)
			}
			if subs, _ := h.store.ListSubscriptions(context.Background(), listAll("acme")); len(subs) != 0 {
				t.Fatalf("invalid requests stored %d subscriptions", len(subs))
			}
		}
	})
}

// A Kafka destination shows its brokers, topic, TLS and SASL user, never
// the SASL password; a PATCH to a private broker host is refused like a
// create.
func TestSubscriptions_KafkaPasswordIsNeverShown(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		var created struct {
			ID          string         `json:"id"`
			Destination map[string]any `json:"destination"`
		}
		acme.json("POST", "/v1/subscriptions", `{"name":"k","event_types":[{"type":"a.b","schema_major":1}],
		 "destination":{"type":"kafka","brokers":["k1.example.com:9093"],"topic":"tenant.events","tls":true,
		  "sasl":{"mechanism":"SCRAM-SHA-512","username":"acme","password":"pw-SECRET-42"}}}`, 201, &created)
		if fmt.Sprint(created.Destination) != "map[auth:<nil> brokers:[k1.example.com:9093] headers:map[] sasl:map[mechanism:SCRAM-SHA-512 username:acme] tls:true topic:tenant.events type:kafka url:]" {
			t.Fatalf("created destination %v", created.Destination)
		}
		for _, path := range []string{"/v1/subscriptions/" + created.ID, "/v1/subscriptions"} {
			if _, _, body := acme.do("GET", path, ""); strings.Contains(string(body), "pw-SECRET-42") {
				t.Fatalf("GET %s shows the SASL password", path)
			}
		}
		wantInvalid(t, acme, "PATCH", "/v1/subscriptions/"+created.ID, `{"destination":{"brokers":["10.0.0.7:9093"]}}`,
			"destination.brokers[0]: private destinations are not allowed")
		var patched struct {
			Destination map[string]any `json:"destination"`
		}
		acme.json("PATCH", "/v1/subscriptions/"+created.ID, `{"destination":{"sasl":null}}`, 200, &patched)
		if _, ok := patched.Destination["sasl"]; ok {
			t.Fatalf("sasl null kept %v", patched.Destination["sasl"])
		}
	})
}

// Verifying a Kafka destination produces a hub.verification record and
// passes on the brokers' acknowledgement.
func TestSubscriptions_KafkaVerifyProducesAVerificationRecord(t *testing.T) {
	cluster := testkit.Kafka(t, 1, "tenant.events")
	dialer := destination.NewDialer(destination.DialOptions{AllowPrivate: true})
	prod, err := kafka.New(kafka.Options{Dial: dialer.DialContext, Timeout: testkit.Patience})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prod.Close() })
	h := newHubAPI(t, testkit.Drivers[len(testkit.Drivers)-1], apiOptions{allowPrivate: true, drivers: map[string]destination.Driver{hub.DestinationKafka: prod}})
	acme := h.tenant("acme")
	var created struct {
		ID string `json:"id"`
	}
	acme.json("POST", "/v1/subscriptions", `{"name":"k","event_types":[{"type":"a.b","schema_major":1}],
	 "destination":{"type":"kafka","brokers":["`+cluster.ListenAddrs()[0]+`"],"topic":"tenant.events"}}`, 201, &created)
	var verified struct {
		VerificationState string `json:"verification_state"`
	}
	acme.json("POST", "/v1/subscriptions/"+created.ID+"/verify", "", 200, &verified)
	if verified.VerificationState != "active" {
		t.Fatalf("after verify: %s", verified.VerificationState)
	}
	recs := testkit.ReadRecords(t, cluster, "tenant.events", 1)
	var typ string
	for _, kv := range recs[0].Headers {
		if kv.Key == "X-Lerian-Event-Type" {
			typ = string(kv.Value)
		}
	}
	if typ != "hub.verification" || string(recs[0].Key) != "acme" || !strings.Contains(string(recs[0].Value), created.ID) {
		t.Fatalf("verification record: type %q, key %q, value %s", typ, recs[0].Key, recs[0].Value)
	}
}
