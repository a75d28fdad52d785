package storetest

import (
	"context"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// testProducerKey: the id of the producer key whose signature verified an
// event is stored with it and comes back wherever the event does: the pull
// read, the lookup by id and the claim that attempts it
// (docs/lerian-platform.md).
func testProducerKey(t *testing.T, open Opener) {
	t.Run("StoredWithTheEventAndReadBackByPullLookupAndClaim", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "a", "")
		e.subscribe(t, "a", "sub_a", 1)
		signed, plain := NewEvent("a", "signed"), NewEvent("a", "plain")
		signed.ProducerKeyID = "ledger-2026.09"
		e.ingest(t, store.IngestParams{Events: []hub.Event{signed, plain}})

		got := e.events(t, "a")
		if len(got) != 2 || got[0].ProducerKeyID != "ledger-2026.09" || got[1].ProducerKeyID != "" {
			t.Fatalf("pull read: %+v", got)
		}
		ev, _, err := e.store.GetEvent(context.Background(), "a", "signed")
		if err != nil || ev.ProducerKeyID != "ledger-2026.09" {
			t.Fatalf("lookup: %q %v", ev.ProducerKeyID, err)
		}
		c := e.claim(t, 1)
		if len(c) != 1 || c[0].Event.ID != "signed" || c[0].Event.ProducerKeyID != "ledger-2026.09" {
			t.Fatalf("claimed %+v", c)
		}
	})
}
