package api_test

import (
	"context"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestDeliveries_IsolationAndValidation(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		rc := newReceiver(t)
		sub, _ := acme.subscription(rc.URL)
		acme.json("POST", "/v1/subscriptions/"+sub+"/verify", "", 200, nil)
		if _, err := h.store.Ingest(context.Background(), store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", "evt-1")}}); err != nil {
			t.Fatal(err)
		}
		var page struct {
			Data []struct {
				ID, EventID, Status string
				Sequence            int64
				NextAttemptAt       *string `json:"next_attempt_at"`
				DeadLetterReason    *string `json:"dead_letter_reason"`
			}
			NextCursor *string `json:"next_cursor"`
		}
		acme.json("GET", "/v1/subscriptions/"+sub+"/deliveries", "", 200, &page)
		if len(page.Data) != 1 || page.Data[0].Status != "pending" || page.Data[0].Sequence != 1 || page.Data[0].NextAttemptAt == nil || page.Data[0].DeadLetterReason != nil || page.NextCursor != nil {
			t.Fatalf("deliveries = %+v", page)
		}
		job := page.Data[0].ID
		var one map[string]any
		acme.json("GET", "/v1/deliveries/"+job, "", 200, &one)
		if one["event_id"] != "evt-1" || one["attempts"] != 0.0 || one["subscription_id"] != sub {
			t.Fatalf("delivery = %v", one)
		}

		for _, r := range []struct{ method, path, body string }{
			{"GET", "/v1/deliveries/" + job, ""},
			{"POST", "/v1/deliveries/" + job + "/replay", ""},
			{"GET", "/v1/subscriptions/" + sub + "/deliveries", ""},
			{"POST", "/v1/subscriptions/" + sub + "/replay", `{}`},
		} {
			status, _, body := globex.do(r.method, r.path, r.body)
			wantError(t, status, body, 404, "not_found")
		}
		for _, bad := range []struct{ method, path, body string }{
			{"GET", "/v1/subscriptions/" + sub + "/deliveries?status=lost", ""},
			{"POST", "/v1/subscriptions/" + sub + "/replay", `{"status":"pending"}`},
			{"POST", "/v1/subscriptions/" + sub + "/replay", `{"since":"yesterday"}`},
			{"POST", "/v1/subscriptions/" + sub + "/replay", `{"since":"2026-11-30T00:00:00Z","extra":1}`},
		} {
			status, _, body := acme.do(bad.method, bad.path, bad.body)
			wantError(t, status, body, 400, "invalid")
		}
		var replayed map[string]any
		acme.json("POST", "/v1/deliveries/"+job+"/replay", "", 202, &replayed)
		if replayed["status"] != "pending" || replayed["id"] == job || replayed["event_id"] != "evt-1" {
			t.Fatalf("replay = %v", replayed)
		}
		acme.json("GET", "/v1/subscriptions/"+sub+"/deliveries?status=pending&limit=1", "", 200, &page)
		if len(page.Data) != 1 || page.NextCursor == nil {
			t.Fatalf("two pending deliveries, one per page: %+v", page)
		}
		acme.json("GET", "/v1/subscriptions/"+sub+"/deliveries?status=pending&limit=1&cursor="+*page.NextCursor, "", 200, &page)
		if len(page.Data) != 1 || page.NextCursor != nil || page.Data[0].ID != job {
			t.Fatalf("second page: %+v", page)
		}
		var bulk struct{ Replayed int }
		acme.json("POST", "/v1/subscriptions/"+sub+"/replay", "", 202, &bulk)
		if bulk.Replayed != 0 {
			t.Fatalf("nothing is dead-lettered yet, replayed %d", bulk.Replayed)
		}
	})
}

// A delivery names its event's type (docs/console.md, names before ids) wherever
// the API shows one: a subscription's deliveries, the search, one delivery,
// the fresh delivery a replay makes.
func TestDeliveries_NameTheirEventsType(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{allowPrivate: true})
		acme := h.tenant("acme")
		rc := newReceiver(t)
		sub, _ := acme.subscription(rc.URL)
		acme.json("POST", "/v1/subscriptions/"+sub+"/verify", "", 200, nil)
		ev := storetest.NewEvent("acme", "evt-1")
		if _, err := h.store.Ingest(context.Background(), store.IngestParams{Events: []hub.Event{ev}}); err != nil {
			t.Fatal(err)
		}
		type delivery struct {
			ID        string
			EventType *string `json:"event_type"`
		}
		var page struct{ Data []delivery }
		for _, path := range []string{"/v1/subscriptions/" + sub + "/deliveries", "/v1/deliveries", "/v1/deliveries?event_id=evt-1"} {
			acme.json("GET", path, "", 200, &page)
			if len(page.Data) != 1 || page.Data[0].EventType == nil || *page.Data[0].EventType != ev.EventType {
				t.Fatalf("GET %s = %+v, want one delivery of a %s event", path, page.Data, ev.EventType)
			}
		}
		var one, replayed map[string]any
		acme.json("GET", "/v1/deliveries/"+page.Data[0].ID, "", 200, &one)
		acme.json("POST", "/v1/deliveries/"+page.Data[0].ID+"/replay", "", 202, &replayed)
		for what, got := range map[string]map[string]any{"the delivery": one, "the replay": replayed} {
			if got["event_type"] != ev.EventType {
				t.Fatalf("%s = %v, want event_type %q", what, got, ev.EventType)
			}
		}
	})
}
