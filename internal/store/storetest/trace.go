package storetest

import (
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// testTraceContext: an event's W3C trace context is stored with it and
// comes back wherever the event does: the pull read and the claim that
// attempts it (docs/tracing.md).
func testTraceContext(t *testing.T, open Opener) {
	const (
		tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		ts = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
	)
	t.Run("StoredWithTheEventAndReadBackByPullAndClaim", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "a", "")
		e.subscribe(t, "a", "sub_a", 1)
		traced, plain := NewEvent("a", "traced"), NewEvent("a", "plain")
		traced.TraceParent, traced.TraceState = tp, ts
		e.ingest(t, store.IngestParams{Events: []hub.Event{traced, plain}})

		got := e.events(t, "a")
		if len(got) != 2 {
			t.Fatalf("inbox = %+v", got)
		}
		if got[0].TraceParent != tp || got[0].TraceState != ts {
			t.Errorf("pull read: trace context %q / %q, want %q / %q", got[0].TraceParent, got[0].TraceState, tp, ts)
		}
		if got[1].TraceParent != "" || got[1].TraceState != "" {
			t.Errorf("an event without trace context reads back %q / %q", got[1].TraceParent, got[1].TraceState)
		}

		c := e.claim(t, 1)
		if len(c) != 1 || c[0].Event.ID != "traced" {
			t.Fatalf("claimed %+v", c)
		}
		if c[0].Event.TraceParent != tp || c[0].Event.TraceState != ts {
			t.Errorf("claim: trace context %q / %q, want %q / %q", c[0].Event.TraceParent, c[0].Event.TraceState, tp, ts)
		}
	})
}
