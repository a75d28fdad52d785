package main

import "testing"

// A subscription's destination in the CLI's listing: a NATS one shows its
// URL (never credentials: the API does not return them), subject and
// stream; a Pub/Sub one its topic's full name (never its key).
func TestSubscriptionWhere(t *testing.T) {
	var s subscriptionView
	s.Destination.Type, s.Destination.URL, s.Destination.Subject = "nats", "tls://nats.example.com:4222", "events.acme"
	if got := s.where(); got != "tls://nats.example.com:4222 subject=events.acme" {
		t.Fatalf("where() = %q", got)
	}
	s.Destination.Stream = "EVENTS"
	if got := s.where(); got != "tls://nats.example.com:4222 subject=events.acme stream=EVENTS" {
		t.Fatalf("where() = %q", got)
	}
	var p subscriptionView
	p.Destination.Type, p.Destination.Project, p.Destination.Topic = "pubsub", "acme-events", "events"
	if got := p.where(); got != "pubsub://projects/acme-events/topics/events" {
		t.Fatalf("where() = %q", got)
	}
}
