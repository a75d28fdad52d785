package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

type saslRequest struct {
	Mechanism string `json:"mechanism"`
	Username  string `json:"username"`
	Password  string `json:"password"`
}

// Limits of broker destinations.
const (
	maxBrokers     = 16
	maxAMQPName    = 255 // exchange names and routing keys (AMQP shortstr)
	maxTopicLength = 249
)

// applyBroker writes a request's broker fields onto dest and secrets; it
// reports whether where the destination delivers changed (then it must be
// verified again).
func applyBroker(d *destinationRequest, dest *hub.Destination, secrets *hub.SubscriptionSecrets) (changed bool, err error) {
	set := func(to *string, from *string) {
		if from != nil && *from != *to {
			*to, changed = *from, true
		}
	}
	set(&dest.Exchange, d.Exchange)
	set(&dest.RoutingKey, d.RoutingKey)
	set(&dest.Topic, d.Topic)
	set(&dest.Subject, d.Subject)
	set(&dest.Stream, d.Stream)
	set(&dest.Project, d.Project)
	if d.Brokers != nil {
		changed = changed || !slices.Equal(dest.Brokers, *d.Brokers)
		dest.Brokers = *d.Brokers
	}
	if d.TLS != nil {
		changed = changed || dest.TLS != *d.TLS
		dest.TLS = *d.TLS
	}
	if len(d.SASL) > 0 {
		if isNull(d.SASL) {
			dest.SASLMechanism, dest.SASLUsername, secrets.Broker = "", "", hub.Credentials{}
		} else {
			var r saslRequest
			if err := strict(d.SASL, &r, "destination.sasl"); err != nil {
				return false, err
			}
			dest.SASLMechanism, dest.SASLUsername = r.Mechanism, r.Username
			secrets.Broker = hub.Credentials{Password: r.Password}
			if r.Mechanism == "" {
				return false, hub.Errorf(hub.EINVALID, "destination.sasl.mechanism: required (null removes sasl)")
			}
		}
		changed = true
	}
	if len(d.Credentials) > 0 {
		sa, err := serviceAccount(d.Credentials)
		if err != nil {
			return false, err
		}
		// Another service account may not publish where the last one
		// did: verified again.
		changed = changed || sa != secrets.Broker.ServiceAccount
		secrets.Broker = hub.Credentials{ServiceAccount: sa}
	}
	return changed, nil
}

// serviceAccount is a Pub/Sub destination's credentials as given: a JSON
// object (kept compact), a string holding one, or null (none).
func serviceAccount(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return "", hub.Errorf(hub.EINVALID, "destination.credentials: a service account key (a JSON object or a string holding one)")
	case isNull(raw):
		return "", nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", hub.Errorf(hub.EINVALID, "destination.credentials: a service account key (a JSON object or a string holding one)")
		}
		return strings.TrimSpace(s), nil
	case raw[0] == '{':
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", hub.Errorf(hub.EINVALID, "destination.credentials: not JSON")
		}
		return b.String(), nil
	}
	return "", hub.Errorf(hub.EINVALID, "destination.credentials: a service account key (a JSON object or a string holding one)")
}

// splitUserinfo takes the userinfo out of a broker URL.
func splitUserinfo(raw string) (string, hub.Credentials) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw, hub.Credentials{}
	}
	pass, _ := u.User.Password()
	c := hub.Credentials{Username: u.User.Username(), Password: pass}
	u.User = nil
	return u.String(), c
}

// validateDestination checks a destination of any type; fields of another
// type must be absent.
func validateDestination(d hub.Destination, secrets hub.SubscriptionSecrets, rc reach) error {
	allowPrivate := rc.allowPrivate
	if hub.IsAWS(d.Type) {
		return validateAWS(d, secrets, rc.sqsEndpoint)
	}
	switch d.Type {
	case hub.DestinationWebhook, hub.DestinationRabbitMQ, hub.DestinationKafka, hub.DestinationNATS, hub.DestinationPubSub:
		if err := notAWS(d.AWS); err != nil {
			return err
		}
	}
	if d.Type != hub.DestinationPubSub {
		if d.Project != "" {
			return hub.Errorf(hub.EINVALID, "destination.project: only for pubsub destinations")
		}
		if secrets.Broker.ServiceAccount != "" {
			return hub.Errorf(hub.EINVALID, "destination.credentials: only for pubsub destinations")
		}
	}
	switch d.Type {
	case hub.DestinationWebhook:
		if d.Exchange != "" || d.RoutingKey != "" || d.Brokers != nil || d.Topic != "" || d.TLS || d.SASLMechanism != "" || d.Subject != "" || d.Stream != "" {
			return hub.Errorf(hub.EINVALID, "destination: exchange, routing_key, brokers, topic, tls, sasl, subject and stream are for rabbitmq, kafka and nats destinations")
		}
		if d.URL == "" {
			return hub.Errorf(hub.EINVALID, "destination.url: required")
		}
		if err := destination.ValidateURL(d.URL, allowPrivate); err != nil {
			return err
		}
		if err := hub.ValidateHeaders(d.Headers); err != nil {
			return err
		}
		if err := hub.ValidateDestinationAuth(d, secrets.Auth); err != nil {
			return err
		}
		if d.AuthType == hub.AuthOAuth2ClientCredentials {
			// The token URL is sent to like the webhook: the same
			// SSRF rules (checked again at dial time).
			return destination.ValidateHTTPURL("destination.auth.token_url", d.OAuth2.TokenURL, allowPrivate)
		}
		return nil
	case hub.DestinationRabbitMQ, hub.DestinationKafka, hub.DestinationNATS, hub.DestinationPubSub:
		if len(d.Headers) > 0 {
			return hub.Errorf(hub.EINVALID, "destination.headers: only for webhook destinations")
		}
		if d.AuthType != "" {
			return hub.Errorf(hub.EINVALID, "destination.auth: only for webhook destinations (a broker's credentials go in its url, sasl or credentials)")
		}
		switch d.Type {
		case hub.DestinationRabbitMQ:
			return validateRabbitMQ(d, allowPrivate)
		case hub.DestinationNATS:
			return validateNATS(d, allowPrivate)
		case hub.DestinationPubSub:
			return validatePubSub(d, secrets)
		}
		return validateKafka(d, secrets, allowPrivate)
	}
	return hub.Errorf(hub.EINVALID, "destination.type: must be webhook, rabbitmq, kafka, nats, pubsub, aws_sqs, aws_sns, aws_eventbridge or aws_kinesis")
}

func validateRabbitMQ(d hub.Destination, allowPrivate bool) error {
	if d.Brokers != nil || d.Topic != "" || d.TLS || d.SASLMechanism != "" {
		return hub.Errorf(hub.EINVALID, "destination: brokers, topic, tls and sasl are for kafka destinations")
	}
	if d.Subject != "" || d.Stream != "" {
		return hub.Errorf(hub.EINVALID, "destination: subject and stream are for nats destinations")
	}
	if d.URL == "" {
		return hub.Errorf(hub.EINVALID, "destination.url: required")
	}
	if len(d.URL) > hub.MaxURLBytes {
		return hub.Errorf(hub.EINVALID, "destination.url: at most %d bytes", hub.MaxURLBytes)
	}
	u, err := url.Parse(d.URL)
	if err != nil || u.Host == "" || (u.Scheme != "amqp" && u.Scheme != "amqps") {
		return hub.Errorf(hub.EINVALID, "destination.url: must be an amqp(s)://user:pass@host:port/vhost URL")
	}
	if u.Scheme == "amqp" && !allowPrivate {
		return hub.Errorf(hub.EINVALID, "destination.url: must be amqps")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return hub.Errorf(hub.EINVALID, "destination.url: must not have a query or a fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return hub.Errorf(hub.EINVALID, "destination.url: bad port %q", p)
		}
	}
	if err := destination.ValidateHost("destination.url", u.Hostname(), allowPrivate); err != nil {
		return err
	}
	if err := amqpName("destination.exchange", d.Exchange); err != nil {
		return err
	}
	if err := amqpName("destination.routing_key", d.RoutingKey); err != nil {
		return err
	}
	for _, m := range placeholder.FindAllString(d.RoutingKey, -1) {
		if m != "{type}" && m != "{tenant}" {
			return hub.Errorf(hub.EINVALID, "destination.routing_key: unknown placeholder %s (use {type} or {tenant})", m)
		}
	}
	return nil
}

var placeholder = regexp.MustCompile(`\{[^}]*\}`)

func amqpName(field, v string) error {
	if len(v) > maxAMQPName {
		return hub.Errorf(hub.EINVALID, "%s: at most %d bytes", field, maxAMQPName)
	}
	if !hub.PlainText(v) {
		return hub.Errorf(hub.EINVALID, "%s: must be valid UTF-8 without control characters", field)
	}
	return nil
}

var topicName = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

func validateKafka(d hub.Destination, secrets hub.SubscriptionSecrets, allowPrivate bool) error {
	if d.URL != "" || d.Exchange != "" || d.RoutingKey != "" || d.Subject != "" || d.Stream != "" {
		return hub.Errorf(hub.EINVALID, "destination: url, exchange, routing_key, subject and stream are not for kafka destinations (use brokers and topic)")
	}
	if len(d.Brokers) == 0 || len(d.Brokers) > maxBrokers {
		return hub.Errorf(hub.EINVALID, "destination.brokers: 1 to %d host:port addresses", maxBrokers)
	}
	for i, b := range d.Brokers {
		field := fmt.Sprintf("destination.brokers[%d]", i)
		host, port, err := net.SplitHostPort(b)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 || strings.ContainsAny(b, "/, ") {
			return hub.Errorf(hub.EINVALID, "%s: %q must be host:port", field, b)
		}
		if err := destination.ValidateHost(field, host, allowPrivate); err != nil {
			return err
		}
	}
	if d.Topic == "" || len(d.Topic) > maxTopicLength || !topicName.MatchString(d.Topic) || d.Topic == "." || d.Topic == ".." {
		return hub.Errorf(hub.EINVALID, "destination.topic: required, 1 to %d of a-z A-Z 0-9 . _ -", maxTopicLength)
	}
	if !d.TLS && !allowPrivate {
		return hub.Errorf(hub.EINVALID, "destination.tls: must be true")
	}
	switch d.SASLMechanism {
	case "":
		return nil
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	default:
		return hub.Errorf(hub.EINVALID, "destination.sasl.mechanism: must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
	}
	if d.SASLMechanism == "PLAIN" && !d.TLS {
		return hub.Errorf(hub.EINVALID, "destination.sasl.mechanism: PLAIN sends the password as is: it needs tls true")
	}
	if d.SASLUsername == "" || secrets.Broker.Password == "" {
		return hub.Errorf(hub.EINVALID, "destination.sasl: username and password are required")
	}
	if !hub.PlainText(d.SASLUsername) || len(d.SASLUsername) > 256 || len(secrets.Broker.Password) > 1024 {
		return hub.Errorf(hub.EINVALID, "destination.sasl: username (up to 256 bytes) and password (up to 1024) must be plain text")
	}
	return nil
}

// Limits of NATS destinations.
const (
	maxNATSSubject = 255
	maxNATSStream  = 255
)

// natsStream is a JetStream stream name: no spaces, dots, wildcards or
// path separators.
var natsStream = regexp.MustCompile(`^[^\s.*>/\\]+$`)

func validateNATS(d hub.Destination, allowPrivate bool) error {
	if d.Brokers != nil || d.Topic != "" || d.TLS || d.SASLMechanism != "" || d.Exchange != "" || d.RoutingKey != "" {
		return hub.Errorf(hub.EINVALID, "destination: exchange, routing_key, brokers, topic, tls and sasl are not for nats destinations (use url, subject and stream)")
	}
	if d.URL == "" {
		return hub.Errorf(hub.EINVALID, "destination.url: required")
	}
	if len(d.URL) > hub.MaxURLBytes {
		return hub.Errorf(hub.EINVALID, "destination.url: at most %d bytes", hub.MaxURLBytes)
	}
	u, err := url.Parse(d.URL)
	if err != nil || u.Host == "" || (u.Scheme != "nats" && u.Scheme != "tls") {
		return hub.Errorf(hub.EINVALID, "destination.url: must be a nats:// or tls://user:pass@host:port URL")
	}
	if u.Scheme == "nats" && !allowPrivate {
		return hub.Errorf(hub.EINVALID, "destination.url: must be tls://")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return hub.Errorf(hub.EINVALID, "destination.url: must not have a path, a query or a fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return hub.Errorf(hub.EINVALID, "destination.url: bad port %q", p)
		}
	}
	if err := destination.ValidateHost("destination.url", u.Hostname(), allowPrivate); err != nil {
		return err
	}
	if err := natsSubject(d.Subject); err != nil {
		return err
	}
	if d.Stream != "" && (len(d.Stream) > maxNATSStream || !natsStream.MatchString(d.Stream) || !hub.PlainText(d.Stream)) {
		return hub.Errorf(hub.EINVALID, "destination.stream: a stream name of at most %d bytes, without spaces, '.', '*', '>', '/' or '\\'", maxNATSStream)
	}
	return nil
}

// natsSubject checks a subject published to: dot-separated tokens, none
// empty, no whitespace, no wildcard (* or >).
func natsSubject(s string) error {
	if s == "" {
		return hub.Errorf(hub.EINVALID, "destination.subject: required")
	}
	if len(s) > maxNATSSubject || !hub.PlainText(s) {
		return hub.Errorf(hub.EINVALID, "destination.subject: at most %d bytes of plain text", maxNATSSubject)
	}
	if strings.IndexFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\r' || r == '\n' }) >= 0 {
		return hub.Errorf(hub.EINVALID, "destination.subject: must not contain spaces")
	}
	for _, tok := range strings.Split(s, ".") {
		switch {
		case tok == "":
			return hub.Errorf(hub.EINVALID, "destination.subject: %q has an empty token", s)
		case strings.ContainsAny(tok, "*>"):
			return hub.Errorf(hub.EINVALID, "destination.subject: wildcards (* and >) are for subscribing, not publishing")
		}
	}
	return nil
}

// validatePubSub checks a Google Cloud Pub/Sub destination: project and
// topic IDs and the service account key (hub.ValidatePubSub). There is no
// host to check: the client talks to Google's endpoint only.
func validatePubSub(d hub.Destination, secrets hub.SubscriptionSecrets) error {
	if d.URL != "" || d.Brokers != nil || d.TLS || d.SASLMechanism != "" || d.Exchange != "" || d.RoutingKey != "" || d.Subject != "" || d.Stream != "" {
		return hub.Errorf(hub.EINVALID, "destination: url, exchange, routing_key, brokers, tls, sasl, subject and stream are not for pubsub destinations (use project, topic and credentials)")
	}
	return hub.ValidatePubSub(d, secrets.Broker.ServiceAccount)
}
