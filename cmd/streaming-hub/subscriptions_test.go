package main

import "testing"

// A subscription's destination in the CLI's listing: a NATS one shows its
// URL (never credentials: the API does not return them), subject and
// stream.
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
}
