package storetest

import (
	"reflect"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// testReach: rate limits and broker destinations
// (docs/rate-limits.md) are stored, updated,
// cleared and handed to the dispatcher with the claimed job.
func testReach(t *testing.T, open Opener) {
	t.Run("RateLimitAndBrokerSettingsRoundTrip", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		rabbit := NewSubscription("acme", "sub_rabbit")
		rabbit.RateLimit = 50
		rabbit.Destination = hub.Destination{Type: hub.DestinationRabbitMQ, URL: "amqps://mq.example.com:5671/prod",
			Exchange: "events", RoutingKey: "{tenant}.{type}", Headers: map[string]string{}}
		kafka := NewSubscription("acme", "sub_kafka")
		kafka.Destination = hub.Destination{Type: hub.DestinationKafka, Brokers: []string{"b1:9093", "b2:9093"},
			Topic: "tenant.events", TLS: true, SASLMechanism: "SCRAM-SHA-512", SASLUsername: "acme", Headers: map[string]string{}}
		nats := NewSubscription("acme", "sub_nats")
		nats.Destination = hub.Destination{Type: hub.DestinationNATS, URL: "tls://nats.example.com:4222",
			Subject: "events.acme", Stream: "EVENTS", Headers: map[string]string{}}
		pubsub := NewSubscription("acme", "sub_pubsub")
		pubsub.Destination = hub.Destination{Type: hub.DestinationPubSub, Project: "acme-events", Topic: "events",
			Headers: map[string]string{}}
		oauth := NewSubscription("acme", "sub_oauth")
		oauth.Destination = hub.Destination{Type: hub.DestinationWebhook, URL: "https://hooks.example.com/in", Headers: map[string]string{},
			AuthType: hub.AuthOAuth2ClientCredentials, OAuth2: hub.OAuth2{TokenURL: "https://auth.example.com/token", ClientID: "hub",
				Scope: "events:write", Audience: "https://hooks.example.com", ClientAuth: hub.OAuth2ClientAuthBody}}
		v1a := NewSubscription("acme", "sub_v1a")
		v1a.SignatureScheme, v1a.SigningPublicKey = hub.SignatureV1a, "whpk_0HHYm1dI6N9QMrp4M2UCTrsW/TDUiUPbcq6I92etrR8="
		// AWS destinations (docs/aws.md): the resource, the role and the
		// external id the hub made, all in destination_config.
		sqs := NewSubscription("acme", "sub_sqs")
		sqs.Destination = hub.Destination{Type: hub.DestinationAWSSQS, Headers: map[string]string{}, AWS: hub.AWS{
			QueueURL: "https://sqs.us-east-1.amazonaws.com/111122223333/events.fifo",
			RoleARN:  "arn:aws:iam::111122223333:role/streaming-hub", ExternalID: hub.NewExternalID()}}
		bus := NewSubscription("acme", "sub_bus")
		bus.Destination = hub.Destination{Type: hub.DestinationAWSEventBridge, Headers: map[string]string{}, AWS: hub.AWS{
			EventBusARN: "arn:aws:events:us-east-1:111122223333:event-bus/ledger", Source: "com.acme", DetailType: "ledger",
			RoleARN: "arn:aws:iam::111122223333:role/streaming-hub", ExternalID: hub.NewExternalID()}}
		for _, in := range []hub.Subscription{rabbit, kafka, nats, pubsub, oauth, v1a, sqs, bus} {
			created, err := e.store.CreateSubscription(e.ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.store.GetSubscription(e.ctx, "acme", in.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, created) || got.RateLimit != in.RateLimit || !reflect.DeepEqual(got.Destination, in.Destination) {
				t.Fatalf("stored %+v\nread %+v", in, got)
			}
		}
		got, _ := e.store.GetSubscription(e.ctx, "acme", "sub_rabbit")
		got.RateLimit, got.Destination.RoutingKey = 0, "{type}"
		updated, err := e.store.UpdateSubscription(e.ctx, got)
		if err != nil {
			t.Fatal(err)
		}
		if updated.RateLimit != 0 || updated.Destination.RoutingKey != "{type}" || updated.Destination.Exchange != "events" {
			t.Fatalf("after update: rate limit %d, destination %+v", updated.RateLimit, updated.Destination)
		}
	})

	t.Run("ClaimCarriesRateLimitAndBrokerSettings", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		s := NewSubscription("acme", "sub_k")
		s.VerificationState, s.RateLimit = hub.VerificationActive, 7
		s.Destination = hub.Destination{Type: hub.DestinationKafka, Brokers: []string{"b1:9093"}, Topic: "t", Headers: map[string]string{}}
		if _, err := e.store.CreateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		e.publish(t, "acme", "ev", 1)
		claimed, err := e.store.ClaimJobs(e.ctx, store.ClaimParams{Batch: 4, Lease: 30e9})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claimed %d jobs, %v", len(claimed), err)
		}
		got := claimed[0].Subscription
		if got.RateLimit != 7 || got.Destination.Topic != "t" || !reflect.DeepEqual(got.Destination.Brokers, []string{"b1:9093"}) {
			t.Fatalf("claimed subscription %+v", got)
		}
	})

	// Mutual TLS settings (docs/receivers.md#mutual-tls-and-fixed-egress)
	// are stored with the destination, kept by an update, cleared by one,
	// and come with a claimed job; the client key is in the sealed secrets.
	t.Run("TLSSettingsRoundTrip", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		s := NewSubscription("acme", "sub_mtls")
		s.VerificationState = hub.VerificationActive
		s.Destination.ClientCertificate = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
		s.Destination.CACertificates = "-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"
		s.Destination.TLSMinVersion = hub.TLSVersion13
		created, err := e.store.CreateSubscription(e.ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.store.GetSubscription(e.ctx, "acme", s.ID)
		if err != nil || !reflect.DeepEqual(got.Destination, s.Destination) || !reflect.DeepEqual(got, created) {
			t.Fatalf("stored %+v\nread %+v (%v)", s.Destination, got.Destination, err)
		}
		e.publish(t, "acme", "ev", 1)
		claimed, err := e.store.ClaimJobs(e.ctx, store.ClaimParams{Batch: 4, Lease: 30e9})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claimed %d jobs, %v", len(claimed), err)
		}
		if d := claimed[0].Subscription.Destination; !reflect.DeepEqual(d, s.Destination) {
			t.Fatalf("claimed destination %+v", d)
		}
		got.Destination.ClientCertificate, got.Destination.TLSMinVersion = "", ""
		updated, err := e.store.UpdateSubscription(e.ctx, got)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := e.store.GetSubscription(e.ctx, "acme", s.ID)
		if again.Destination.ClientCertificate != "" || again.Destination.TLSMinVersion != "" ||
			again.Destination.CACertificates != s.Destination.CACertificates || !reflect.DeepEqual(again, updated) {
			t.Fatalf("after update: %+v", again.Destination)
		}
	})

	t.Run("ClaimCarriesOAuth2AndSignatureSettings", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		s := NewSubscription("acme", "sub_o")
		s.VerificationState = hub.VerificationActive
		s.Destination.AuthType, s.Destination.AuthHeaderName = hub.AuthOAuth2ClientCredentials, ""
		s.Destination.OAuth2 = hub.OAuth2{TokenURL: "https://auth.example.com/token", ClientID: "hub", ClientAuth: hub.OAuth2ClientAuthBasic}
		s.SignatureScheme, s.SigningPublicKey = hub.SignatureV1a, "whpk_0HHYm1dI6N9QMrp4M2UCTrsW/TDUiUPbcq6I92etrR8="
		if _, err := e.store.CreateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		e.publish(t, "acme", "ev", 1)
		claimed, err := e.store.ClaimJobs(e.ctx, store.ClaimParams{Batch: 4, Lease: 30e9})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claimed %d jobs, %v", len(claimed), err)
		}
		if got := claimed[0].Subscription.Destination; got.OAuth2 != s.Destination.OAuth2 || got.AuthType != hub.AuthOAuth2ClientCredentials {
			t.Fatalf("claimed destination %+v", got)
		}
		if got := claimed[0].Subscription; got.SignatureScheme != hub.SignatureV1a || got.SigningPublicKey != s.SigningPublicKey {
			t.Fatalf("claimed signature %q %q", got.SignatureScheme, got.SigningPublicKey)
		}
	})
}
