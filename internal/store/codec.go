package store

import (
	"encoding/json"
	"fmt"

	hub "github.com/lerianstudio/streaming-hub"
)

// SubscriptionJSON holds a subscription's JSON-encoded columns, the same
// for every driver.
type SubscriptionJSON struct {
	EventTypes    string
	Headers       string
	RetrySchedule *string // nil: the default curve
	Filters       *string // nil: none
	// DestinationConfig is a broker destination's settings and any
	// destination's TLS settings ("{}" for a webhook without them).
	DestinationConfig string
}

// destinationConfig is what destination_config holds.
type destinationConfig struct {
	Exchange      string   `json:"exchange,omitempty"`
	RoutingKey    string   `json:"routing_key,omitempty"`
	Brokers       []string `json:"brokers,omitempty"`
	Topic         string   `json:"topic,omitempty"`
	TLS           bool     `json:"tls,omitempty"`
	SASLMechanism string   `json:"sasl_mechanism,omitempty"`
	SASLUsername  string   `json:"sasl_username,omitempty"`
	Subject       string   `json:"subject,omitempty"`
	Stream        string   `json:"stream,omitempty"`
	Project       string   `json:"project,omitempty"`
	// Mutual TLS: public material only (the client key is sealed).
	ClientCertificate string `json:"client_certificate,omitempty"`
	CACertificates    string `json:"ca_certificates,omitempty"`
	TLSMinVersion     string `json:"tls_min_version,omitempty"`
	// A webhook's oauth2_client_credentials settings (its client secret
	// is sealed with the other credentials).
	OAuth2 *oauth2Config `json:"oauth2,omitempty"`
	// How attempts to the destination are signed: the subscription's
	// signature scheme when not v1, and a v1a subscription's public key
	// (kept here rather than in a column of their own).
	SignatureScheme  string `json:"signature_scheme,omitempty"`
	SigningPublicKey string `json:"signing_public_key,omitempty"`
	// An AWS destination's settings (docs/aws.md): none is secret, the
	// external id included.
	AWS *awsConfig `json:"aws,omitempty"`
}

type awsConfig struct {
	QueueURL    string `json:"queue_url,omitempty"`
	TopicARN    string `json:"topic_arn,omitempty"`
	EventBusARN string `json:"event_bus_arn,omitempty"`
	Source      string `json:"source,omitempty"`
	DetailType  string `json:"detail_type,omitempty"`
	StreamARN   string `json:"stream_arn,omitempty"`
	RoleARN     string `json:"role_arn"`
	ExternalID  string `json:"external_id"`
}

type oauth2Config struct {
	TokenURL   string `json:"token_url"`
	ClientID   string `json:"client_id"`
	Scope      string `json:"scope,omitempty"`
	Audience   string `json:"audience,omitempty"`
	ClientAuth string `json:"client_auth"`
}

// EncodeSubscription encodes s's JSON columns.
func EncodeSubscription(s hub.Subscription) (SubscriptionJSON, error) {
	var out SubscriptionJSON
	et, err := json.Marshal(s.EventTypes)
	if err != nil {
		return out, err
	}
	headers := s.Destination.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	h, err := json.Marshal(headers)
	if err != nil {
		return out, err
	}
	out.EventTypes, out.Headers = string(et), string(h)
	d := s.Destination
	cfg := destinationConfig{Exchange: d.Exchange, RoutingKey: d.RoutingKey, Brokers: d.Brokers,
		Topic: d.Topic, TLS: d.TLS, SASLMechanism: d.SASLMechanism, SASLUsername: d.SASLUsername,
		Subject: d.Subject, Stream: d.Stream, Project: d.Project,
		ClientCertificate: d.ClientCertificate, CACertificates: d.CACertificates, TLSMinVersion: d.TLSMinVersion,
		SignatureScheme: s.SignatureScheme, SigningPublicKey: s.SigningPublicKey}
	if o := d.OAuth2; o != (hub.OAuth2{}) {
		cfg.OAuth2 = &oauth2Config{TokenURL: o.TokenURL, ClientID: o.ClientID, Scope: o.Scope, Audience: o.Audience, ClientAuth: o.ClientAuth}
	}
	if a := d.AWS; a != (hub.AWS{}) {
		cfg.AWS = &awsConfig{QueueURL: a.QueueURL, TopicARN: a.TopicARN, EventBusARN: a.EventBusARN, Source: a.Source,
			DetailType: a.DetailType, StreamARN: a.StreamARN, RoleARN: a.RoleARN, ExternalID: a.ExternalID}
	}
	dc, err := json.Marshal(cfg)
	if err != nil {
		return out, err
	}
	out.DestinationConfig = string(dc)
	if s.RetrySchedule != nil {
		rs, err := json.Marshal(s.RetrySchedule)
		if err != nil {
			return out, err
		}
		str := string(rs)
		out.RetrySchedule = &str
	}
	if len(s.Filters) > 0 {
		f, err := json.Marshal(s.Filters)
		if err != nil {
			return out, err
		}
		str := string(f)
		out.Filters = &str
	}
	return out, nil
}

// DecodeSubscription fills s's fields from its JSON columns.
func DecodeSubscription(s *hub.Subscription, eventTypes, headers, retrySchedule, filters []byte) error {
	if err := json.Unmarshal(eventTypes, &s.EventTypes); err != nil {
		return fmt.Errorf("subscription %s: event_types: %w", s.ID, err)
	}
	if err := json.Unmarshal(headers, &s.Destination.Headers); err != nil {
		return fmt.Errorf("subscription %s: destination_headers: %w", s.ID, err)
	}
	if len(retrySchedule) > 0 {
		// Old or hand-edited data may hold anything here; delivery falls
		// back to the default curve rather than failing, so decode
		// leniently and let the dispatcher judge.
		if err := json.Unmarshal(retrySchedule, &s.RetrySchedule); err != nil {
			s.RetrySchedule = []string{string(retrySchedule)}
		}
	}
	s.Filters = Filters(filters)
	return nil
}

// DecodeDestinationConfig fills s's broker, AWS and OAuth 2.0 settings, its
// signature scheme and public key, from destination_config.
func DecodeDestinationConfig(s *hub.Subscription, raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	var dc destinationConfig
	if err := json.Unmarshal(raw, &dc); err != nil {
		return fmt.Errorf("subscription %s: destination_config: %w", s.ID, err)
	}
	d := &s.Destination
	d.Exchange, d.RoutingKey, d.Brokers, d.Topic = dc.Exchange, dc.RoutingKey, dc.Brokers, dc.Topic
	d.TLS, d.SASLMechanism, d.SASLUsername = dc.TLS, dc.SASLMechanism, dc.SASLUsername
	d.Subject, d.Stream, d.Project = dc.Subject, dc.Stream, dc.Project
	d.ClientCertificate, d.CACertificates, d.TLSMinVersion = dc.ClientCertificate, dc.CACertificates, dc.TLSMinVersion
	s.SignatureScheme, s.SigningPublicKey = dc.SignatureScheme, dc.SigningPublicKey
	if o := dc.OAuth2; o != nil {
		d.OAuth2 = hub.OAuth2{TokenURL: o.TokenURL, ClientID: o.ClientID, Scope: o.Scope, Audience: o.Audience, ClientAuth: o.ClientAuth}
	}
	if a := dc.AWS; a != nil {
		d.AWS = hub.AWS{QueueURL: a.QueueURL, TopicARN: a.TopicARN, EventBusARN: a.EventBusARN, Source: a.Source,
			DetailType: a.DetailType, StreamARN: a.StreamARN, RoleARN: a.RoleARN, ExternalID: a.ExternalID}
	}
	return nil
}
