package api

import (
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// subscriptionJSON is a subscription as the API shows it: never a secret.
type subscriptionJSON struct {
	ID                string             `json:"id"`
	TenantID          string             `json:"tenant_id"`
	Name              string             `json:"name"`
	EventTypes        []hub.EventTypeRef `json:"event_types"`
	Destination       destinationJSON    `json:"destination"`
	RetrySchedule     []string           `json:"retry_schedule"`
	MaxInFlight       int                `json:"max_in_flight"`
	Filters           []hub.Filter       `json:"filters"`
	RateLimit         *rateLimitJSON     `json:"rate_limit"`
	Transform         *string            `json:"transform"`
	Enabled           bool               `json:"enabled"`
	VerificationState string             `json:"verification_state"`
	DisabledReason    *string            `json:"disabled_reason"`
	DisabledAt        *time.Time         `json:"disabled_at"`
	BreakerState      string             `json:"breaker_state"`
	FailureSpan       *failureSpanJSON   `json:"failure_span"`
	CreatedAt         time.Time          `json:"created_at"`
	UpdatedAt         time.Time          `json:"updated_at"`
	// SigningSecret is set only in the answer to a create.
	SigningSecret string `json:"signing_secret,omitempty"`
	// Warnings, on a create or an update, name event types no manifest
	// lists and no event carried.
	Warnings []string `json:"warnings,omitempty"`

	// Backfill is the subscription's latest backfill
	// (docs/backfill.md); null when it
	// never asked for one.
	Backfill *backfillJSON `json:"backfill"`

	// Signature is how attempts are signed; SigningPublicKey is a v1a
	// subscription's current public key (whpk_), null for v1.
	Signature        signatureJSON `json:"signature"`
	SigningPublicKey *string       `json:"signing_public_key"`
}

type signatureJSON struct {
	Scheme string `json:"scheme"`
}

type destinationJSON struct {
	Type    string            `json:"type"`
	URL     string            `json:"url"` // a broker's without its userinfo
	Headers map[string]string `json:"headers"`
	Auth    *authJSON         `json:"auth"`
	// Broker destinations only; credentials are never shown.
	Exchange   *string   `json:"exchange,omitempty"`
	RoutingKey *string   `json:"routing_key,omitempty"`
	Brokers    []string  `json:"brokers,omitempty"`
	Topic      string    `json:"topic,omitempty"`
	TLS        *bool     `json:"tls,omitempty"`
	SASL       *saslJSON `json:"sasl,omitempty"`
	Subject    string    `json:"subject,omitempty"`
	Stream     *string   `json:"stream,omitempty"`
	Project    string    `json:"project,omitempty"` // pubsub; its service account key is never shown
	// Mutual TLS: the client certificate as it is known (its SHA-256 and
	// expiry; the certificate and its key are never shown), the CAs and
	// the lowest version; absent when not set.
	ClientCertificateSHA256    string     `json:"client_certificate_sha256,omitempty"`
	ClientCertificateExpiresAt *time.Time `json:"client_certificate_expires_at,omitempty"`
	CACertificates             string     `json:"ca_certificates,omitempty"`
	TLSMinVersion              string     `json:"tls_min_version,omitempty"`
	// AWS destinations (docs/aws.md): the resource, the role, the
	// external id the hub made (not secret: it goes in the role's trust
	// policy), the region, and the setup link when the hub offers one.
	QueueURL    string `json:"queue_url,omitempty"`
	TopicARN    string `json:"topic_arn,omitempty"`
	EventBusARN string `json:"event_bus_arn,omitempty"`
	Source      string `json:"source,omitempty"`
	DetailType  string `json:"detail_type,omitempty"`
	StreamARN   string `json:"stream_arn,omitempty"`
	RoleARN     string `json:"role_arn,omitempty"`
	ExternalID  string `json:"external_id,omitempty"`
	Region      string `json:"region,omitempty"`
	SetupURL    string `json:"aws_setup_url,omitempty"`
}

// saslJSON shows a Kafka destination's SASL mechanism and user, never the
// password.
type saslJSON struct {
	Mechanism string `json:"mechanism"`
	Username  string `json:"username"`
}

// authJSON shows how a destination authenticates, never with what: an
// oauth2_client_credentials auth shows all but its client_secret.
type authJSON struct {
	Type       string `json:"type"`
	Name       string `json:"name,omitempty"` // the header of the header type
	TokenURL   string `json:"token_url,omitempty"`
	ClientID   string `json:"client_id,omitempty"`
	Scope      string `json:"scope,omitempty"`
	Audience   string `json:"audience,omitempty"`
	ClientAuth string `json:"client_auth,omitempty"`
}

type rateLimitJSON struct {
	PerSecond int `json:"per_second"`
}

type failureSpanJSON struct {
	FirstFailureAt time.Time `json:"first_failure_at"`
	LastFailureAt  time.Time `json:"last_failure_at"`
}

func (s *Server) toSubscriptionJSON(sub hub.Subscription) subscriptionJSON {
	out := subscriptionJSON{
		ID:                sub.ID,
		TenantID:          sub.TenantID,
		Name:              sub.Name,
		EventTypes:        sub.EventTypes,
		RetrySchedule:     sub.RetrySchedule,
		MaxInFlight:       sub.MaxInFlight,
		Enabled:           sub.Enabled,
		VerificationState: string(sub.VerificationState),
		DisabledAt:        sub.DisabledAt,
		BreakerState:      "closed",
		CreatedAt:         sub.CreatedAt,
		UpdatedAt:         sub.UpdatedAt,
		Destination: destinationJSON{
			Type:    sub.Destination.Type,
			URL:     sub.Destination.URL,
			Headers: sub.Destination.Headers,
		},
	}
	out.Signature.Scheme = hub.SignatureV1
	if sub.SignatureScheme == hub.SignatureV1a {
		out.Signature.Scheme = hub.SignatureV1a
		key := sub.SigningPublicKey
		out.SigningPublicKey = &key
	}
	if out.Filters = sub.Filters; out.Filters == nil {
		out.Filters = []hub.Filter{}
	}
	switch d := sub.Destination; d.Type {
	case hub.DestinationRabbitMQ:
		out.Destination.Exchange, out.Destination.RoutingKey = &d.Exchange, &d.RoutingKey
	case hub.DestinationNATS:
		out.Destination.Subject, out.Destination.Stream = d.Subject, &d.Stream
	case hub.DestinationPubSub:
		out.Destination.Project, out.Destination.Topic = d.Project, d.Topic
	case hub.DestinationAWSSQS, hub.DestinationAWSSNS, hub.DestinationAWSEventBridge, hub.DestinationAWSKinesis:
		o, a := &out.Destination, d.AWS
		o.QueueURL, o.TopicARN, o.EventBusARN, o.StreamARN = a.QueueURL, a.TopicARN, a.EventBusARN, a.StreamARN
		o.Source, o.DetailType, o.RoleARN, o.ExternalID = a.Source, a.DetailType, a.RoleARN, a.ExternalID
		o.Region, o.SetupURL = regionOf(d), s.awsSetupURL(sub)
	case hub.DestinationKafka:
		out.Destination.Brokers, out.Destination.Topic, out.Destination.TLS = d.Brokers, d.Topic, &d.TLS
		if d.SASLMechanism != "" {
			out.Destination.SASL = &saslJSON{Mechanism: d.SASLMechanism, Username: d.SASLUsername}
		}
	}
	if sum, notAfter, ok := hub.ClientCertificateInfo(sub.Destination.ClientCertificate); ok {
		notAfter = notAfter.UTC()
		out.Destination.ClientCertificateSHA256, out.Destination.ClientCertificateExpiresAt = sum, &notAfter
	}
	out.Destination.CACertificates, out.Destination.TLSMinVersion = sub.Destination.CACertificates, sub.Destination.TLSMinVersion
	if out.Destination.Headers == nil {
		out.Destination.Headers = map[string]string{}
	}
	if sub.Destination.AuthType != "" {
		out.Destination.Auth = &authJSON{Type: sub.Destination.AuthType}
		switch o := sub.Destination.OAuth2; sub.Destination.AuthType {
		case hub.AuthHeader:
			out.Destination.Auth.Name = sub.Destination.AuthHeaderName
		case hub.AuthOAuth2ClientCredentials:
			a := out.Destination.Auth
			a.TokenURL, a.ClientID, a.Scope, a.Audience, a.ClientAuth = o.TokenURL, o.ClientID, o.Scope, o.Audience, o.ClientAuth
		}
	}
	if sub.RateLimit > 0 {
		out.RateLimit = &rateLimitJSON{PerSecond: sub.RateLimit}
	}
	if sub.Transform != "" {
		program := sub.Transform
		out.Transform = &program
	}
	if sub.DisabledReason != "" {
		reason := sub.DisabledReason
		out.DisabledReason = &reason
	}
	if sub.FailureSpan != nil {
		out.FailureSpan = &failureSpanJSON{sub.FailureSpan.First, sub.FailureSpan.Last}
	}
	if s.deps.BreakerState != nil {
		out.BreakerState = s.deps.BreakerState(sub.TenantID, sub.Destination.Address())
	}
	return out
}
