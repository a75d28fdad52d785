package storetest

import (
	"fmt"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// testDrift: the topic-drift check's findings are kept, each change is
// returned once, and a check that changed something tells every active
// tenant with one hub.topics.drift event, matched like any event.
func testDrift(t *testing.T, open Opener) {
	e := setup(t, open, store.Options{})
	e.tenant(t, "acme", "")
	e.tenant(t, "globex", "")
	e.tenant(t, "sleepy", hub.TenantInactive)
	e.operational(t, "acme", "sub_drift", hub.EventTopicsDrift)

	a := hub.TopicDrift{Topic: "lerian.streaming.a", Kind: hub.DriftUndeclared}
	b := hub.TopicDrift{Topic: "lerian.streaming.b", Kind: hub.DriftMissing}
	c := hub.TopicDrift{Topic: "lerian.streaming.a", Kind: hub.DriftUnassigned}
	record := func(current ...hub.TopicDrift) store.DriftChanges {
		t.Helper()
		ch, err := e.store.RecordTopicDrift(e.ctx, current)
		if err != nil {
			t.Fatalf("RecordTopicDrift: %v", err)
		}
		return ch
	}
	if ch := record(b, a, a); fmt.Sprint(ch.Detected) != fmt.Sprint([]hub.TopicDrift{a, b}) || len(ch.Resolved) != 0 {
		t.Fatalf("first check: %+v", ch)
	}
	if ch := record(a, b); !ch.Empty() {
		t.Fatalf("the same findings again: %+v, want no change", ch)
	}
	e.clock.Advance(1)
	if ch := record(a, c); fmt.Sprint(ch.Detected) != fmt.Sprint([]hub.TopicDrift{c}) || fmt.Sprint(ch.Resolved) != fmt.Sprint([]hub.TopicDrift{b}) {
		t.Fatalf("second change: %+v", ch)
	}
	if got, err := e.store.ListTopicDrift(e.ctx); err != nil || fmt.Sprint(got) != fmt.Sprint([]hub.TopicDrift{c, a}) {
		t.Fatalf("ListTopicDrift = %+v, %v", got, err)
	}

	for _, tenant := range []string{"acme", "globex"} {
		evs := e.hubEvents(t, tenant, hub.EventTopicsDrift)
		if len(evs) != 2 {
			t.Fatalf("%s has %d hub.topics.drift events, want one per change (2)", tenant, len(evs))
		}
		first, second := dataOf(t, evs[0]), dataOf(t, evs[1])
		if fmt.Sprint(first["detected"]) != "[map[kind:undeclared topic:lerian.streaming.a] map[kind:missing topic:lerian.streaming.b]]" ||
			fmt.Sprint(first["resolved"]) != "[]" {
			t.Fatalf("%s's first event data %v", tenant, first)
		}
		if fmt.Sprint(second["detected"]) != "[map[kind:unassigned topic:lerian.streaming.a]]" ||
			fmt.Sprint(second["resolved"]) != "[map[kind:missing topic:lerian.streaming.b]]" {
			t.Fatalf("%s's second event data %v", tenant, second)
		}
		if ev := evs[0]; ev.Source != hub.OperationalSource || ev.Type != "studio.lerian.hub.topics.drift" || ev.SchemaMajor != 1 {
			t.Fatalf("event %+v", ev)
		}
	}
	if got := e.hubEvents(t, "sleepy", hub.EventTopicsDrift); len(got) != 0 {
		t.Fatalf("an inactive tenant was told: %d events", len(got))
	}
	claimed := e.claim(t, 10)
	if len(claimed) != 2 || claimed[0].Job.SubscriptionID != "sub_drift" || claimed[0].Event.EventType != hub.EventTopicsDrift {
		t.Fatalf("claimed %+v, want sub_drift's two jobs", claimed)
	}
}
