package app_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// operationalRequests are the requests rc got of an operational event type,
// each with its decoded body, after checking it is signed with secret.
func operationalRequests(t *testing.T, rc *recorder, secret, eventType string) []map[string]any {
	t.Helper()
	key, err := destination.SecretKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for i := range rc.count() {
		req, body := rc.request(i)
		if req.Header.Get("X-Lerian-Event-Type") != eventType {
			continue
		}
		ts, _ := strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64)
		if sig := destination.Signature(key, req.Header.Get("webhook-id"), ts, body); !strings.Contains(req.Header.Get("webhook-signature"), sig) {
			t.Fatalf("%s not signed with the subscription's secret: %q", eventType, req.Header.Get("webhook-signature"))
		}
		if req.Header.Get("ce-type") != "studio.lerian."+eventType || req.Header.Get("ce-source") != "//streaming-hub" ||
			req.Header.Get("ce-schemaversion") != "1.0.0" || req.Header.Get("X-Lerian-Sequence") == "" {
			t.Fatalf("%s headers %v", eventType, req.Header)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatalf("%s body %q: %v", eventType, body, err)
		}
		out = append(out, m)
	}
	return out
}

// A subscription to the hub's operational events receives, signed, the
// dead letter of another subscription's exhausted job and then that
// subscription's auto-disable (on a fake clock: five days of failures).
func TestEndToEnd_OperationalEventsAreDeliveredToTheirSubscribers(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		clock := testkit.NewClock()
		l := startLive(t, d, clock)
		broken := newRecorder(t)
		broken.setStatus(func(int) int { return 503 })
		sub := l.subscribe("acme", broken.URL, destination.NewSecret(), []string{"1s"}) // 2 attempts, then the dead letter

		ops := newRecorder(t)
		opsSecret := destination.NewSecret()
		o := l.subscribe("acme", ops.URL, opsSecret, nil)
		o.EventTypes = []hub.EventTypeRef{{Type: hub.EventSubscriptionDisabled, SchemaMajor: 1}, {Type: hub.EventDeliveryDeadLettered, SchemaMajor: 1}}
		if _, err := l.Store.UpdateSubscription(context.Background(), o); err != nil {
			t.Fatal(err)
		}

		t0 := clock.Now()
		failAt := func(h time.Duration, id string) {
			l.failAt(t0.Add(h), sub.ID, id)
		}
		failAt(0, "evt-1")
		failAt(12*time.Hour, "evt-2") // evt-1's retry comes due and fails: exhausted
		testkit.WaitFor(t, "the exhausted dead letter's event", func() bool {
			for _, m := range operationalRequests(t, ops, opsSecret, hub.EventDeliveryDeadLettered) {
				if m["subscription_id"] == sub.ID && m["event_id"] == "evt-1" && m["reason"] == "exhausted" {
					return m["attempts"] == 2.0 && m["last_error"] == "destination answered 503" && m["event_type"] == "transaction.posted"
				}
			}
			return false
		})
		failAt(60*time.Hour, "evt-3")
		failAt(100*time.Hour, "evt-4")
		// At 120h both gates are met by the first failure then: evt-5's
		// attempt, or an older job's retry that the clock's jump made due,
		// which may disable the subscription before evt-5 makes a job. So
		// wait for the disabled event itself, not for evt-5's attempt.
		clock.Set(t0.Add(120 * time.Hour))
		l.produce(ceRecord("acme", "evt-5", ""))
		testkit.WaitFor(t, "the disabled event", func() bool {
			for _, m := range operationalRequests(t, ops, opsSecret, hub.EventSubscriptionDisabled) {
				if m["subscription_id"] == sub.ID {
					reason, _ := m["reason"].(string)
					return m["name"] == "e2e" && strings.HasPrefix(reason, "auto-disabled: failing since") && m["disabled_at"] != nil
				}
			}
			return false
		})
		// The operational subscription's own events are pulled too.
		var page struct {
			Data []struct{ Type string }
		}
		l.api("GET", "/v1/events?types=hub.subscription.disabled", "acme", "", &page)
		if len(page.Data) != 1 {
			t.Fatalf("pulled %d hub.subscription.disabled events, want 1", len(page.Data))
		}
	})
}
