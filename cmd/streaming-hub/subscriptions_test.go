package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

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

// --backfill-since takes a time or a duration back from now.
func TestBackfillSince(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]string{
		"2026-11-30T11:00:00Z":      "2026-11-30T11:00:00Z",
		"2026-11-30T10:30:00+01:00": "2026-11-30T10:30:00+01:00",
		"1h":                        "2026-11-30T11:00:00Z",
		"90m":                       "2026-11-30T10:30:00Z",
	} {
		if got, err := backfillSince(in, now); err != nil || got != want {
			t.Errorf("backfillSince(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"yesterday", "-1h", ""} {
		if _, err := backfillSince(in, now); err == nil {
			t.Errorf("backfillSince(%q) accepted", in)
		}
	}
}

// create --backfill-since sends the backfill; get shows its progress.
func TestSubscriptionsBackfillFlagAndProgress(t *testing.T) {
	var body map[string]any
	answer := `{"id":"sub_1","name":"hooks","event_types":[],"destination":{"type":"webhook","url":"https://e.com"},
		"backfill":{"since":"2026-11-30T11:00:00Z","state":"running","started_at":"2026-11-30T12:00:05Z","finished_at":null,
		"matched":42,"queued":40,"skipped":2,"sequence":500,"until_sequence":1200}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := http.StatusOK
		if r.Method == "POST" {
			json.NewDecoder(r.Body).Decode(&body)
			status = http.StatusCreated
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	c := newCLI(t, srv.URL, "tok")
	c.ok("subscriptions", "create", "--name", "hooks", "--event-type", "transaction.posted:1", "--url", "https://e.com",
		"--backfill-since", "2026-11-30T11:00:00Z")
	if got := fmt.Sprint(body["backfill"]); got != "map[since:2026-11-30T11:00:00Z]" {
		t.Fatalf("create sent backfill %s", got)
	}
	out := c.ok("subscriptions", "get", "sub_1")
	if got := field(t, out, "backfill"); got != "running (since 2026-11-30T11:00:00Z): 40 queued, 2 skipped of 42 matched; sequence 500 of 1200" {
		t.Fatalf("get shows backfill %q", got)
	}
	if errOut := c.fail(exitUsage, "subscriptions", "update", "sub_1", "--backfill-since", "soon"); !strings.Contains(errOut, "--backfill-since") {
		t.Fatalf("a bad --backfill-since: %s", errOut)
	}
}
