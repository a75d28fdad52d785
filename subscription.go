package hub

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// VerificationState is whether a destination proved it is the subscriber's:
// pending after create, active after a passing probe, failed after a
// failing one. It is independent of Enabled; matching needs both.
type VerificationState string

const (
	VerificationPending VerificationState = "pending"
	VerificationActive  VerificationState = "active"
	VerificationFailed  VerificationState = "failed"
)

// EventTypeRef is one (event type, schema major) a subscription wants.
type EventTypeRef struct {
	Type        string `json:"type"` // <resource>.<event>
	SchemaMajor int    `json:"schema_major"`
}

// String writes the reference in the one notation the CLI, the console
// and the docs use for a versioned event type: type@major, such as
// transaction.posted@1 (docs/concepts.md, "Event types and their majors").
func (r EventTypeRef) String() string {
	return r.Type + "@" + strconv.Itoa(r.SchemaMajor)
}

// ParseEventTypeRef reads type@major, and type:major as well (what the CLI
// wrote before); a type alone is major 1. It checks the notation, not the
// type's form: ValidateEventTypes does.
func ParseEventTypeRef(s string) (EventTypeRef, error) {
	s = strings.TrimSpace(s)
	typ, major, has := strings.Cut(s, "@")
	if !has {
		typ, major, has = strings.Cut(s, ":")
	}
	r := EventTypeRef{Type: strings.TrimSpace(typ), SchemaMajor: 1}
	if r.Type == "" {
		return r, fmt.Errorf("%q: an event type is type@major, such as transaction.posted@1", s)
	}
	if has {
		n, err := strconv.Atoi(strings.TrimSpace(major))
		if err != nil || n < 1 {
			return r, fmt.Errorf("%q: the schema major after '@' must be a number from 1, such as transaction.posted@1", s)
		}
		r.SchemaMajor = n
	}
	return r, nil
}

// Auth types of a destination.
const (
	AuthBearer = "bearer"
	AuthBasic  = "basic"
	AuthHeader = "header"
	// AuthOAuth2ClientCredentials: the hub fetches a token from
	// Destination.OAuth2.TokenURL (RFC 6749 section 4.4) and sends it as
	// a bearer (docs/receivers.md#oauth-20-client-credentials).
	AuthOAuth2ClientCredentials = "oauth2_client_credentials"
)

// How an OAuth 2.0 client authenticates to the token endpoint: HTTP Basic
// (the default, which every authorization server must support) or
// client_id and client_secret in the form body.
const (
	OAuth2ClientAuthBasic = "basic"
	OAuth2ClientAuthBody  = "body"
)

// OAuth2 is the non-secret part of an oauth2_client_credentials auth (the
// client secret is sealed in Credentials.ClientSecret).
type OAuth2 struct {
	TokenURL   string
	ClientID   string
	Scope      string // space-separated; "": none sent
	Audience   string // "": none sent
	ClientAuth string // basic or body
}

// Destination types.
const (
	DestinationWebhook  = "webhook"
	DestinationRabbitMQ = "rabbitmq"
	DestinationKafka    = "kafka"
	DestinationNATS     = "nats"
	DestinationPubSub   = "pubsub"
	// The AWS types are in aws.go.
)

// Destination is where a subscription delivers. Credentials are not here:
// they live sealed in Subscription.Secrets.
type Destination struct {
	Type string // webhook, rabbitmq, kafka, nats, pubsub or an AWS type (IsAWS)
	// URL is the webhook's absolute http(s) URL, the RabbitMQ broker's
	// amqp(s) URL or the NATS server's nats:// or tls:// URL, without its
	// userinfo (sealed in Secrets.Broker).
	URL     string
	Headers map[string]string // sent on every attempt (webhook)
	// AuthType is "", bearer, basic, header or oauth2_client_credentials;
	// AuthHeaderName names the header of the header type. The values are
	// secret.
	AuthType       string
	AuthHeaderName string

	// RabbitMQ: the exchange and the routing key template ({type},
	// {tenant}).
	Exchange   string
	RoutingKey string
	// Kafka: seed brokers (host:port), the topic, TLS and SASL (the
	// password is sealed in Secrets.Broker). Google Cloud Pub/Sub: Topic
	// is the topic's ID within Project.
	Brokers       []string
	Topic         string
	TLS           bool
	SASLMechanism string
	SASLUsername  string
	// NATS JetStream: the subject published to and, optionally, the
	// stream expected to capture it.
	Subject string
	Stream  string
	// Google Cloud Pub/Sub: the project of Topic (its service account
	// key is sealed in Secrets.Broker).
	Project string
	// Mutual TLS, for every destination that speaks TLS (SpeaksTLS;
	// docs/receivers.md#mutual-tls-and-fixed-egress): the client
	// certificate (PEM, leaf first; its key is sealed in
	// Secrets.ClientKey), the CAs that replace the system roots (PEM) and
	// the lowest TLS version ("" is "1.2", or "1.3").
	ClientCertificate string
	CACertificates    string
	TLSMinVersion     string
	// OAuth2 is set for the oauth2_client_credentials auth type (webhook).
	OAuth2 OAuth2
	// AWS holds an AWS destination's settings (docs/aws.md).
	AWS AWS
}

// Address is the destination as breakers know it
// (docs/breakers.md,
// docs/brokers.md): the webhook URL, or
// the broker's address (never with credentials).
func (d Destination) Address() string {
	switch d.Type {
	case DestinationRabbitMQ, DestinationNATS:
		if i := strings.Index(d.URL, "://"); i >= 0 {
			rest := d.URL[i+3:]
			if j := strings.IndexByte(rest, '/'); j >= 0 {
				rest = rest[:j]
			}
			return strings.ToLower(d.URL[:i+3] + rest)
		}
		return d.URL
	case DestinationKafka:
		return "kafka://" + strings.ToLower(strings.Join(d.Brokers, ","))
	case DestinationPubSub:
		return "pubsub://" + d.Project // one endpoint for all: the project is the tenant's "broker"
	case DestinationAWSSQS:
		// The queue's ARN: one queue's trouble is not another's.
		if q, err := ParseQueueURL("queue_url", d.AWS.QueueURL, ""); err == nil {
			return q.ARN("")
		}
		return "aws_sqs:" + d.AWS.QueueURL
	case DestinationAWSSNS, DestinationAWSEventBridge, DestinationAWSKinesis:
		return d.AWSResource()
	}
	return d.URL
}

// Signature schemes (Standard Webhooks signature identifiers).
const (
	SignatureV1  = "v1"  // HMAC-SHA256 under a whsec_ secret
	SignatureV1a = "v1a" // Ed25519 under a key pair: whsk_ private, whpk_ public
)

// FailureSpan is a subscription's open failure span: its first and last
// failed attempt since the last success.
type FailureSpan struct {
	First, Last time.Time
}

// Subscription routes a tenant's events of some types to one destination.
type Subscription struct {
	ID            string
	TenantID      string
	Name          string
	EventTypes    []EventTypeRef
	Destination   Destination
	RetrySchedule []string // Go durations; nil means the default curve
	MaxInFlight   int
	// Filters must all hold for an event to match
	// (docs/filters-and-transforms.md); nil: none.
	Filters []Filter
	// RateLimit is at most how many attempts per second one process
	// makes to the subscription (a token bucket); 0: no limit.
	RateLimit int
	// Transform is a jq program that turns each event into the body sent
	// (docs/filters-and-transforms.md,
	// internal/transform); "": the event's data unchanged.
	Transform string
	// SignatureScheme is how attempts are signed: v1 (HMAC-SHA256, also
	// when "") or v1a (Ed25519). It is chosen at create.
	SignatureScheme string
	// SigningPublicKey is a v1a subscription's current public key,
	// whpk_<base64>: not secret, shown in answers (its private key is
	// sealed in Secrets).
	SigningPublicKey string

	Enabled           bool
	VerificationState VerificationState
	DisabledReason    string
	DisabledAt        *time.Time
	FailureSpan       *FailureSpan

	// Secrets is the sealed SubscriptionSecrets: signing secrets and
	// destination credentials, opened in memory only when needed.
	Secrets []byte

	Version   int64 // bumped by every write; updates are compare-and-set on it
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Matches reports whether the subscription wants an event of eventType with
// schema major major. It does not look at Enabled or VerificationState.
func (s *Subscription) Matches(eventType string, major int) bool {
	for _, et := range s.EventTypes {
		if et.Type == eventType && et.SchemaMajor == major {
			return true
		}
	}
	return false
}

// Wants reports whether the subscription wants ev: its (event type,
// schema major) and every filter. It does not look at Enabled or
// VerificationState.
func (s *Subscription) Wants(ev *Event) bool {
	return s.Matches(ev.EventType, ev.SchemaMajor) && MatchFilters(s.Filters, ev)
}

// Deliverable reports whether matching may pick the subscription: enabled
// AND verified, two independent conditions.
func (s *Subscription) Deliverable() bool {
	return s.Enabled && s.VerificationState == VerificationActive
}

// SubscriptionSecrets is what Subscription.Secrets seals.
type SubscriptionSecrets struct {
	// Signing holds the current secret first, then older ones still inside
	// their rotation overlap.
	Signing []SigningSecret `json:"signing"`
	Auth    Credentials     `json:"auth"`
	// Broker holds a broker destination's credentials: the RabbitMQ URL's
	// userinfo, the Kafka SASL password, the NATS URL's userinfo, the
	// Pub/Sub service account key.
	Broker Credentials `json:"broker,omitzero"`
	// ClientKey is the PEM private key of Destination.ClientCertificate
	// (mutual TLS).
	ClientKey string `json:"client_key,omitempty"`
}

// SigningSecret is a whsec_ secret (v1) or a whsk_ private key (v1a);
// ExpiresAt is nil for the current one.
type SigningSecret struct {
	Secret    string     `json:"secret"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// Credentials are a destination's auth values, by AuthType.
type Credentials struct {
	Token    string `json:"token,omitempty"`    // bearer
	Username string `json:"username,omitempty"` // basic
	Password string `json:"password,omitempty"` // basic
	Value    string `json:"value,omitempty"`    // header
	// ServiceAccount is a Google Cloud service account key (JSON), a
	// Pub/Sub destination's credentials.
	ServiceAccount string `json:"service_account,omitempty"`
	// ClientSecret is an oauth2_client_credentials auth's client secret.
	ClientSecret string `json:"client_secret,omitempty"`
}

// Valid returns the signing secrets still valid at now, current first.
func (s SubscriptionSecrets) Valid(now time.Time) []string {
	var out []string
	for _, sec := range s.Signing {
		if sec.ExpiresAt == nil || now.Before(*sec.ExpiresAt) {
			out = append(out, sec.Secret)
		}
	}
	return out
}

// Limits of a subscription.
const (
	MaxEventTypes       = 100
	MaxRetrySteps       = 12
	MaxRetryStep        = 10 * time.Hour
	MaxMaxInFlight      = 64
	MaxCustomHeaders    = 20
	MaxHeaderValueBytes = 1024
	MaxNameBytes        = 256
	MaxURLBytes         = 2048
	MaxRateLimit        = 10000
	// A transform: at most this much jq program, and per event at
	// most this long to run, this much memory to use and this much body
	// out (docs/filters-and-transforms.md).
	MaxTransformBytes  = 4 << 10
	MaxTransformOutput = 1 << 20
	MaxTransformMemory = 32 << 20
	TransformTimeout   = 50 * time.Millisecond
)

// ValidateName checks a subscription's or a tenant's name: present,
// bounded, valid UTF-8 without control characters.
func ValidateName(name string) error {
	if strings.TrimSpace(name) == "" {
		return Errorf(EINVALID, "name: required")
	}
	if len(name) > MaxNameBytes {
		return Errorf(EINVALID, "name: at most %d bytes", MaxNameBytes)
	}
	if !PlainText(name) {
		return Errorf(EINVALID, "name: must be valid UTF-8 without control characters")
	}
	return nil
}

// PlainText reports whether s is valid UTF-8 without control characters
// (NUL included): what may be stored as text and shown anywhere.
func PlainText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// ValidateEventTypes checks event_types: non-empty, each <resource>.<event>
// with schema_major >= 1, no repeats.
func ValidateEventTypes(ets []EventTypeRef) error {
	if len(ets) == 0 {
		return Errorf(EINVALID, "event_types: at least one is required")
	}
	if len(ets) > MaxEventTypes {
		return Errorf(EINVALID, "event_types: at most %d", MaxEventTypes)
	}
	seen := make(map[EventTypeRef]bool, len(ets))
	for i, et := range ets {
		if _, _, err := ParseEventType(et.Type); err != nil {
			return Errorf(EINVALID, "event_types[%d].type: %v", i, err)
		}
		if et.SchemaMajor < 1 {
			return Errorf(EINVALID, "event_types[%d].schema_major: must be 1 or more", i)
		}
		if seen[et] {
			return Errorf(EINVALID, "event_types[%d]: %s is listed twice", i, et)
		}
		seen[et] = true
	}
	return nil
}

// ValidateRetrySchedule checks a retry_schedule override: 1..12 Go
// durations, each > 0 and <= 10h. nil means the default curve.
func ValidateRetrySchedule(steps []string) error {
	if steps == nil {
		return nil
	}
	_, err := ParseRetrySchedule(steps)
	return err
}

// ParseRetrySchedule parses a retry_schedule override.
func ParseRetrySchedule(steps []string) ([]time.Duration, error) {
	if len(steps) < 1 || len(steps) > MaxRetrySteps {
		return nil, Errorf(EINVALID, "retry_schedule: 1 to %d steps", MaxRetrySteps)
	}
	out := make([]time.Duration, len(steps))
	for i, s := range steps {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || d > MaxRetryStep {
			return nil, Errorf(EINVALID, "retry_schedule[%d]: %q must be a Go duration > 0 and <= 10h", i, s)
		}
		out[i] = d
	}
	return out, nil
}

// ValidateMaxInFlight checks max_in_flight: 1..64.
func ValidateMaxInFlight(n int) error {
	if n < 1 || n > MaxMaxInFlight {
		return Errorf(EINVALID, "max_in_flight: must be 1 to %d", MaxMaxInFlight)
	}
	return nil
}

// ValidateRateLimit checks rate_limit.per_second: 1..10,000 (0 is no
// limit: the field is null).
func ValidateRateLimit(n int) error {
	if n != 0 && (n < 1 || n > MaxRateLimit) {
		return Errorf(EINVALID, "rate_limit.per_second: must be 1 to %d", MaxRateLimit)
	}
	return nil
}

// reservedHeaders are set by the hub on every attempt; a destination's
// custom headers may not replace them.
var reservedHeaders = map[string]bool{
	"host": true, "content-length": true, "content-type": true, "user-agent": true,
	"authorization": true, "transfer-encoding": true, "connection": true, "te": true,
	"trailer": true, "upgrade": true, "keep-alive": true, "proxy-authorization": true,
	"webhook-id": true, "webhook-timestamp": true, "webhook-signature": true,
}

// ReservedHeader reports whether name is the hub's to set.
func ReservedHeader(name string) bool {
	n := strings.ToLower(name)
	return reservedHeaders[n] || strings.HasPrefix(n, "x-lerian-") || strings.HasPrefix(n, "ce-")
}

// ValidateHeaders checks custom headers: valid names that are not the hub's,
// values without control characters, bounded.
func ValidateHeaders(h map[string]string) error {
	if len(h) > MaxCustomHeaders {
		return Errorf(EINVALID, "destination.headers: at most %d", MaxCustomHeaders)
	}
	for name, v := range h {
		if err := validHeaderName(name); err != nil {
			return Errorf(EINVALID, "destination.headers: %v", err)
		}
		if ReservedHeader(name) {
			return Errorf(EINVALID, "destination.headers: %s is set by the hub and cannot be overridden", name)
		}
		if err := validHeaderValue(v); err != nil {
			return Errorf(EINVALID, "destination.headers[%s]: %v", name, err)
		}
	}
	return nil
}

// ValidateAuth checks a destination's auth settings and credentials of
// the bearer, basic and header types (an oauth2_client_credentials auth
// needs its settings: ValidateDestinationAuth).
func ValidateAuth(authType, headerName string, c Credentials) error {
	return ValidateDestinationAuth(Destination{AuthType: authType, AuthHeaderName: headerName}, c)
}

// ValidateDestinationAuth checks d's auth settings and credentials c, of
// any type. For oauth2_client_credentials the token URL is checked for its
// form only: whether its host may be reached is the caller's
// (internal/destination).
func ValidateDestinationAuth(d Destination, c Credentials) error {
	authType, headerName := d.AuthType, d.AuthHeaderName
	switch authType {
	case "":
		return nil
	case AuthBearer:
		if c.Token == "" {
			return Errorf(EINVALID, "destination.auth.token: required for bearer")
		}
		return wrapValue("destination.auth.token", validHeaderValue(c.Token))
	case AuthBasic:
		if c.Username == "" || c.Password == "" {
			return Errorf(EINVALID, "destination.auth: username and password are required for basic")
		}
		if strings.Contains(c.Username, ":") {
			return Errorf(EINVALID, "destination.auth.username: must not contain ':'")
		}
		return wrapValue("destination.auth", errorsJoin(validHeaderValue(c.Username), validHeaderValue(c.Password)))
	case AuthHeader:
		if err := validHeaderName(headerName); err != nil {
			return Errorf(EINVALID, "destination.auth.name: %v", err)
		}
		if ReservedHeader(headerName) {
			return Errorf(EINVALID, "destination.auth.name: %s is set by the hub and cannot be overridden", headerName)
		}
		if c.Value == "" {
			return Errorf(EINVALID, "destination.auth.value: required for header")
		}
		return wrapValue("destination.auth.value", validHeaderValue(c.Value))
	case AuthOAuth2ClientCredentials:
		return validateOAuth2(d.OAuth2, c.ClientSecret)
	}
	return Errorf(EINVALID, "destination.auth.type: must be bearer, basic, header or oauth2_client_credentials")
}

// Limits of oauth2_client_credentials values.
const (
	MaxOAuth2ClientID = 256
	MaxOAuth2Value    = 1024 // client_secret, scope, audience
)

func validateOAuth2(o OAuth2, secret string) error {
	if o.TokenURL == "" {
		return Errorf(EINVALID, "destination.auth.token_url: required for oauth2_client_credentials")
	}
	if len(o.TokenURL) > MaxURLBytes {
		return Errorf(EINVALID, "destination.auth.token_url: at most %d bytes", MaxURLBytes)
	}
	if o.ClientID == "" {
		return Errorf(EINVALID, "destination.auth.client_id: required for oauth2_client_credentials")
	}
	if secret == "" {
		return Errorf(EINVALID, "destination.auth.client_secret: required for oauth2_client_credentials")
	}
	for _, f := range []struct {
		name, v string
		max     int
	}{
		{"client_id", o.ClientID, MaxOAuth2ClientID},
		{"client_secret", secret, MaxOAuth2Value},
		{"scope", o.Scope, MaxOAuth2Value},
		{"audience", o.Audience, MaxOAuth2Value},
	} {
		if len(f.v) > f.max {
			return Errorf(EINVALID, "destination.auth.%s: at most %d bytes", f.name, f.max)
		}
		if !PlainText(f.v) {
			return Errorf(EINVALID, "destination.auth.%s: must be valid UTF-8 without control characters", f.name)
		}
	}
	switch o.ClientAuth {
	case OAuth2ClientAuthBasic, OAuth2ClientAuthBody:
	default:
		return Errorf(EINVALID, "destination.auth.client_auth: must be basic or body")
	}
	return nil
}

func wrapValue(field string, err error) error {
	if err != nil {
		return Errorf(EINVALID, "%s: %v", field, err)
	}
	return nil
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func validHeaderName(name string) error {
	if name == "" || len(name) > 256 {
		return fmt.Errorf("header name must be 1..256 bytes")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return fmt.Errorf("%q is not a valid header name", name)
		}
	}
	return nil
}

func validHeaderValue(v string) error {
	if len(v) > MaxHeaderValueBytes {
		return fmt.Errorf("at most %d bytes", MaxHeaderValueBytes)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return fmt.Errorf("must not contain control characters")
		}
	}
	return nil
}
