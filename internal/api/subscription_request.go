package api

import (
	"bytes"
	"encoding/json"
	"slices"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/transform"
)

// subscriptionRequest is the body of create and PATCH. Absent fields are
// nil; in a PATCH they keep their value. retry_schedule and
// destination.auth may be null to clear them; filters is replaced whole,
// and null or [] clears it.
type subscriptionRequest struct {
	Name          *string             `json:"name"`
	EventTypes    *[]hub.EventTypeRef `json:"event_types"`
	Destination   *destinationRequest `json:"destination"`
	RetrySchedule json.RawMessage     `json:"retry_schedule"`
	MaxInFlight   *int                `json:"max_in_flight"`
	RateLimit     json.RawMessage     `json:"rate_limit"`
	Enabled       *bool               `json:"enabled"`
	Filters       json.RawMessage     `json:"filters"`
	// Backfill asks for the retained events from a time on
	// (docs/backfill.md); it is not a
	// stored field: each one given (re)starts a backfill.
	Backfill json.RawMessage `json:"backfill"`
	// Transform is a jq program
	// (docs/backfill.md); null or ""
	// clears it.
	Transform json.RawMessage `json:"transform"`
	// Signature is {"scheme": "v1"|"v1a"}: chosen at create, the same
	// (or absent) in a PATCH.
	Signature json.RawMessage `json:"signature"`
}

type signatureRequest struct {
	Scheme *string `json:"scheme"`
}

// signatureScheme reads signature: the scheme as stored ("" for v1, the
// default, or v1a); given is false when the request has none.
func (req subscriptionRequest) signatureScheme() (scheme string, given bool, err error) {
	if len(req.Signature) == 0 {
		return "", false, nil
	}
	var sr signatureRequest
	if isNull(req.Signature) {
		return "", false, hub.Errorf(hub.EINVALID, `signature: an object {"scheme": "v1"|"v1a"}`)
	}
	if err := strict(req.Signature, &sr, "signature"); err != nil {
		return "", false, err
	}
	switch {
	case sr.Scheme == nil:
		return "", false, hub.Errorf(hub.EINVALID, "signature.scheme: required")
	case *sr.Scheme == hub.SignatureV1:
		return "", true, nil
	case *sr.Scheme == hub.SignatureV1a:
		return hub.SignatureV1a, true, nil
	}
	return "", false, hub.Errorf(hub.EINVALID, "signature.scheme: must be v1 (HMAC-SHA256) or v1a (Ed25519)")
}

// rateLimitRequest is rate_limit: {"per_second": N}.
type rateLimitRequest struct {
	PerSecond *int `json:"per_second"`
}

type destinationRequest struct {
	Type    *string            `json:"type"`
	URL     *string            `json:"url"`
	Headers *map[string]string `json:"headers"`
	Auth    json.RawMessage    `json:"auth"`
	// Broker destinations (docs/brokers.md).
	Exchange   *string         `json:"exchange"`
	RoutingKey *string         `json:"routing_key"`
	Brokers    *[]string       `json:"brokers"`
	Topic      *string         `json:"topic"`
	TLS        *bool           `json:"tls"`
	SASL       json.RawMessage `json:"sasl"`
	Subject    *string         `json:"subject"` // nats (docs/brokers.md)
	Stream     *string         `json:"stream"`
	// pubsub (docs/brokers.md): the
	// project, and the service account key (a JSON object, or a string
	// holding one) sealed and never shown.
	Project     *string         `json:"project"`
	Credentials json.RawMessage `json:"credentials"`
	// Mutual TLS (docs/receivers.md#mutual-tls-and-fixed-egress), for any
	// destination that speaks TLS: PEM strings (the key sealed, never
	// shown) and "1.2" or "1.3". Absent keeps, null clears.
	ClientCertificate json.RawMessage `json:"client_certificate"`
	ClientKey         json.RawMessage `json:"client_key"`
	CACertificates    json.RawMessage `json:"ca_certificates"`
	TLSMinVersion     json.RawMessage `json:"tls_min_version"`
	// AWS destinations (docs/aws.md): the resource, the role the hub
	// assumes, an EventBridge entry's source and detail type. The
	// external id is the hub's: a request may only repeat it.
	QueueURL    *string         `json:"queue_url"`
	TopicARN    *string         `json:"topic_arn"`
	EventBusARN *string         `json:"event_bus_arn"`
	StreamARN   *string         `json:"stream_arn"`
	Source      *string         `json:"source"`
	DetailType  *string         `json:"detail_type"`
	RoleARN     *string         `json:"role_arn"`
	ExternalID  json.RawMessage `json:"external_id"`
}

// reach is what decides where a destination may point: private sinks
// (STREAMING_HUB_ALLOW_PRIVATE_SINKS) and the operator's SQS endpoint.
type reach struct {
	allowPrivate bool
	sqsEndpoint  string
}

type authRequest struct {
	Type     string `json:"type"`
	Token    string `json:"token"`
	Username string `json:"username"`
	Password string `json:"password"`
	Name     string `json:"name"`
	Value    string `json:"value"`
	// oauth2_client_credentials: client_secret is sealed, the rest shown.
	TokenURL     string `json:"token_url"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	Scope        string `json:"scope"`
	Audience     string `json:"audience"`
	ClientAuth   string `json:"client_auth"`
}

// authFields are the fields each auth type takes besides type.
var authFields = map[string][]string{
	hub.AuthBearer:                  {"token"},
	hub.AuthBasic:                   {"username", "password"},
	hub.AuthHeader:                  {"name", "value"},
	hub.AuthOAuth2ClientCredentials: {"token_url", "client_id", "client_secret", "scope", "audience", "client_auth"},
}

// onlyItsFields refuses a field of another auth type, so that nothing
// given is silently dropped.
func (a authRequest) onlyItsFields() error {
	allowed, ok := authFields[a.Type]
	if !ok {
		return nil // ValidateAuth names the type
	}
	for _, f := range []struct{ name, v string }{{"token", a.Token}, {"username", a.Username}, {"password", a.Password},
		{"name", a.Name}, {"value", a.Value}, {"token_url", a.TokenURL}, {"client_id", a.ClientID},
		{"client_secret", a.ClientSecret}, {"scope", a.Scope}, {"audience", a.Audience}, {"client_auth", a.ClientAuth}} {
		if f.v != "" && !slices.Contains(allowed, f.name) {
			return hub.Errorf(hub.EINVALID, "destination.auth.%s: not a field of the %s type", f.name, a.Type)
		}
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// strict decodes a nested raw value with the same rules as the body.
func strict(raw json.RawMessage, v any, field string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return hub.Errorf(hub.EINVALID, "%s: %s", field, describeJSONError(err))
	}
	return nil
}

// parseTransform reads transform: a jq program that compiles within its
// limits, or null or "" for none.
func parseTransform(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var program string
	if err := json.Unmarshal(raw, &program); err != nil {
		return "", hub.Errorf(hub.EINVALID, "transform: must be a string (a jq program) or null")
	}
	if program == "" {
		return "", nil
	}
	if _, err := transform.Compile(program); err != nil {
		return "", err
	}
	return program, nil
}

// applyTLS writes a request's mutual TLS fields onto dest and secrets:
// an absent field keeps its value, null (or "") clears it. A new client
// certificate is checked against the wall clock (as TLS peers check it):
// an expired one is refused here rather than at every attempt.
func applyTLS(d *destinationRequest, dest *hub.Destination, secrets *hub.SubscriptionSecrets) error {
	for _, f := range []struct {
		raw   json.RawMessage
		to    *string
		field string
	}{
		{d.ClientCertificate, &dest.ClientCertificate, "destination.client_certificate"},
		{d.ClientKey, &secrets.ClientKey, "destination.client_key"},
		{d.CACertificates, &dest.CACertificates, "destination.ca_certificates"},
		{d.TLSMinVersion, &dest.TLSMinVersion, "destination.tls_min_version"},
	} {
		if len(f.raw) == 0 {
			continue
		}
		if isNull(f.raw) {
			*f.to = ""
			continue
		}
		if err := json.Unmarshal(f.raw, f.to); err != nil {
			return hub.Errorf(hub.EINVALID, "%s: must be a string or null", f.field)
		}
	}
	if len(d.ClientCertificate) > 0 && isNull(d.ClientCertificate) && len(d.ClientKey) == 0 {
		secrets.ClientKey = "" // no certificate, no key for it
	}
	if len(d.ClientCertificate) > 0 && dest.ClientCertificate != "" {
		return hub.ValidateDestinationTLS(*dest, secrets.ClientKey, time.Now())
	}
	return nil
}

// apply writes the request onto sub (a new one for create, the stored one
// for PATCH) and onto its opened secrets, then validates the result.
// It reports whether the destination URL changed.
func (req subscriptionRequest) apply(sub *hub.Subscription, secrets *hub.SubscriptionSecrets, rc reach) (urlChanged bool, err error) {
	if scheme, given, err := req.signatureScheme(); err != nil {
		return false, err
	} else if given && scheme != sub.SignatureScheme {
		// Receivers verify with what they were given at create: a new
		// scheme is a new subscription (a new key within the scheme is
		// a rotation).
		return false, hub.Errorf(hub.EINVALID, "signature.scheme: cannot be changed after create; create a new subscription, or rotate the key (rotate-secret)")
	}
	if req.Name != nil {
		sub.Name = *req.Name
	}
	if req.EventTypes != nil {
		sub.EventTypes = *req.EventTypes
	}
	if len(req.RetrySchedule) > 0 {
		if isNull(req.RetrySchedule) {
			sub.RetrySchedule = nil
		} else {
			var steps []string
			if err := strict(req.RetrySchedule, &steps, "retry_schedule"); err != nil {
				return false, err
			}
			if steps == nil {
				steps = []string{}
			}
			sub.RetrySchedule = steps
		}
	}
	if req.MaxInFlight != nil {
		sub.MaxInFlight = *req.MaxInFlight
	}
	if len(req.Filters) > 0 {
		filters, err := hub.ParseFilters(req.Filters)
		if err != nil {
			return false, err
		}
		sub.Filters = filters
	}
	if len(req.RateLimit) > 0 {
		if isNull(req.RateLimit) {
			sub.RateLimit = 0
		} else {
			var rl rateLimitRequest
			if err := strict(req.RateLimit, &rl, "rate_limit"); err != nil {
				return false, err
			}
			if rl.PerSecond == nil {
				return false, hub.Errorf(hub.EINVALID, "rate_limit.per_second: required (null clears rate_limit)")
			}
			if *rl.PerSecond == 0 {
				return false, hub.ValidateRateLimit(-1)
			}
			sub.RateLimit = *rl.PerSecond
		}
	}
	if len(req.Transform) > 0 {
		program, err := parseTransform(req.Transform)
		if err != nil {
			return false, err
		}
		sub.Transform = program
	}
	if req.Enabled != nil {
		sub.Enabled = *req.Enabled
	}
	if d := req.Destination; d != nil {
		if d.Type != nil && *d.Type != sub.Destination.Type {
			// Another kind of destination: nothing of the old one stays,
			// but the external id an AWS destination's role trusts,
			// which stays the subscription's while it delivers to AWS.
			externalID := ""
			if hub.IsAWS(sub.Destination.Type) && hub.IsAWS(*d.Type) {
				externalID = sub.Destination.AWS.ExternalID
			}
			sub.Destination = hub.Destination{Type: *d.Type, AWS: hub.AWS{ExternalID: externalID}}
			secrets.Auth, secrets.Broker = hub.Credentials{}, hub.Credentials{}
			secrets.ClientKey = ""
			urlChanged = true
		}
		if d.URL != nil {
			u := *d.URL
			if t := sub.Destination.Type; t == hub.DestinationRabbitMQ || t == hub.DestinationNATS {
				// The userinfo is a credential: sealed, never shown.
				var user hub.Credentials
				u, user = splitUserinfo(u)
				secrets.Broker = user
			}
			urlChanged = urlChanged || u != sub.Destination.URL
			sub.Destination.URL = u
		}
		changed, err := applyBroker(d, &sub.Destination, secrets)
		if err != nil {
			return false, err
		}
		urlChanged = urlChanged || changed
		if changed, err = applyAWS(d, &sub.Destination); err != nil {
			return false, err
		}
		urlChanged = urlChanged || changed
		if d.Headers != nil {
			sub.Destination.Headers = *d.Headers
		}
		if err := applyTLS(d, &sub.Destination, secrets); err != nil {
			return false, err
		}
		if len(d.Auth) > 0 {
			if isNull(d.Auth) {
				sub.Destination.AuthType, sub.Destination.AuthHeaderName = "", ""
				sub.Destination.OAuth2 = hub.OAuth2{}
				secrets.Auth = hub.Credentials{}
			} else {
				var a authRequest
				if err := strict(d.Auth, &a, "destination.auth"); err != nil {
					return false, err
				}
				if err := a.onlyItsFields(); err != nil {
					return false, err
				}
				sub.Destination.AuthType, sub.Destination.AuthHeaderName = a.Type, ""
				sub.Destination.OAuth2 = hub.OAuth2{}
				// Keep only what the type uses: nothing stray is stored.
				switch a.Type {
				case hub.AuthBearer:
					secrets.Auth = hub.Credentials{Token: a.Token}
				case hub.AuthBasic:
					secrets.Auth = hub.Credentials{Username: a.Username, Password: a.Password}
				case hub.AuthHeader:
					sub.Destination.AuthHeaderName = a.Name
					secrets.Auth = hub.Credentials{Value: a.Value}
				case hub.AuthOAuth2ClientCredentials:
					// The object is replaced whole, client_secret
					// included: a secret never follows a token_url
					// it was not given for.
					if a.ClientAuth == "" {
						a.ClientAuth = hub.OAuth2ClientAuthBasic
					}
					sub.Destination.OAuth2 = hub.OAuth2{TokenURL: a.TokenURL, ClientID: a.ClientID,
						Scope: a.Scope, Audience: a.Audience, ClientAuth: a.ClientAuth}
					secrets.Auth = hub.Credentials{ClientSecret: a.ClientSecret}
				}
			}
		}
	}
	return urlChanged, validateSubscription(*sub, *secrets, rc)
}

func validateSubscription(sub hub.Subscription, secrets hub.SubscriptionSecrets, rc reach) error {
	if err := hub.ValidateName(sub.Name); err != nil {
		return err
	}
	if err := hub.ValidateEventTypes(sub.EventTypes); err != nil {
		return err
	}
	if err := validateDestination(sub.Destination, secrets, rc); err != nil {
		return err
	}
	if err := hub.ValidateDestinationTLS(sub.Destination, secrets.ClientKey, time.Time{}); err != nil {
		return err
	}
	if err := hub.ValidateRetrySchedule(sub.RetrySchedule); err != nil {
		return err
	}
	if err := hub.ValidateRateLimit(sub.RateLimit); err != nil {
		return err
	}
	return hub.ValidateMaxInFlight(sub.MaxInFlight)
}
