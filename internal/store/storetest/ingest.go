package storetest

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func testIngest(t *testing.T, open Opener) {
	t.Run("AcceptedEventsGetPerTenantSequencesAndRoundTrip", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "a", "")
		e.tenant(t, "b", "")
		a1, b1, a2, a3 := NewEvent("a", "1"), NewEvent("b", "1"), NewEvent("a", "2"), NewEvent("a", "3")
		a2.Extensions = map[string]string{"ce-resourcetype": "transaction", "ce-traceparent": "00-abc-01"}
		a2.Subject, a2.DataSchema = "", "https://schemas.example/tx/1"
		a3.Data = []byte{0, 1, 2, 0xff} // binary, never parsed
		a3.DataContentType = "application/octet-stream"
		a1.Partition, a1.Offset = 3, 41
		res := e.ingest(t, store.IngestParams{Events: []hub.Event{a1, b1, a2, a3}})
		wantOutcomes(t, res, accept(1), accept(1), accept(2), accept(3))

		want := []hub.Event{a1, a2, a3}
		for i := range want {
			want[i].Sequence = int64(i + 1)
			want[i].ReceivedAt = e.clock.Now()
		}
		if got := e.events(t, "a"); !reflect.DeepEqual(got, want) {
			t.Fatalf("inbox of a:\n got %+v\nwant %+v", got, want)
		}
		if got := e.events(t, "b"); len(got) != 1 || got[0].ID != "1" || got[0].Sequence != 1 {
			t.Fatalf("inbox of b = %+v", got)
		}
	})

	t.Run("DuplicateIDWritesNothing", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "a", "")
		e.tenant(t, "b", "")
		e.ingest(t, store.IngestParams{Events: []hub.Event{NewEvent("a", "1")}})

		again := NewEvent("a", "1")
		again.Data = []byte(`{"changed":true}`)
		res := e.ingest(t, store.IngestParams{Events: []hub.Event{
			again, NewEvent("a", "2"), NewEvent("a", "2"), NewEvent("b", "1"),
		}})
		// A ce-id is unique per tenant: b's "1" is not a's "1".
		wantOutcomes(t, res, discard(hub.ReasonDuplicate), accept(2), discard(hub.ReasonDuplicate), accept(1))
		// The tenants with new events, once each in first order: whom
		// ingest wakes.
		if !reflect.DeepEqual(res.Tenants, []string{"a", "b"}) {
			t.Fatalf("tenants = %v, want [a b]", res.Tenants)
		}
		got := e.events(t, "a")
		if len(got) != 2 || string(got[0].Data) != `{"id":"1"}` || got[1].ID != "2" {
			t.Fatalf("inbox of a = %+v", got)
		}
	})

	t.Run("RosterGateDiscardsUnknownAndInactiveTenants", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "on", "")
		e.tenant(t, "off", hub.TenantInactive)
		res := e.ingest(t, store.IngestParams{Events: []hub.Event{
			NewEvent("nobody", "1"), NewEvent("off", "1"), NewEvent("on", "1"),
		}})
		wantOutcomes(t, res, discard(hub.ReasonUnknownTenant), discard(hub.ReasonInactiveTenant), accept(1))
		if !reflect.DeepEqual(res.Tenants, []string{"on"}) {
			t.Fatalf("tenants = %v, want [on]: a discarded event's tenant has nothing new", res.Tenants)
		}
		if got := e.events(t, "off"); len(got) != 0 {
			t.Fatalf("inactive tenant's inbox = %+v", got)
		}

		// The roster is read in the transaction: a change applies to the
		// very next record.
		active := hub.TenantActive
		if _, err := e.store.UpdateTenant(e.ctx, store.UpdateTenantParams{ID: "off", Status: &active}); err != nil {
			t.Fatal(err)
		}
		res = e.ingest(t, store.IngestParams{Events: []hub.Event{NewEvent("off", "1")}})
		wantOutcomes(t, res, accept(1))
	})

	t.Run("ConcurrentBatchesGiveGapFreeSequences", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "a", "")
		e.tenant(t, "b", "")
		const writers, batches, size = 4, 10, 10
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := range batches {
					var evs []hub.Event
					for i := range size {
						// Tenants interleave in every batch, in both
						// orders, to provoke lock-order deadlocks.
						tenant := []string{"a", "b"}[(i+w)%2]
						evs = append(evs, NewEvent(tenant, fmt.Sprintf("w%d-b%d-%d", w, n, i)))
					}
					if _, err := e.store.Ingest(e.ctx, store.IngestParams{Events: evs}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for _, tenant := range []string{"a", "b"} {
			var got []hub.Event
			for after := int64(0); ; {
				page, err := e.store.ListEvents(e.ctx, store.ListEventsParams{TenantID: tenant, After: after, Limit: 7})
				if err != nil {
					t.Fatal(err)
				}
				if len(page) == 0 {
					break
				}
				got = append(got, page...)
				after = page[len(page)-1].Sequence
			}
			if len(got) != writers*batches*size/2 {
				t.Fatalf("tenant %s has %d events, want %d", tenant, len(got), writers*batches*size/2)
			}
			for i, ev := range got {
				if ev.Sequence != int64(i+1) {
					t.Fatalf("tenant %s: event %d has sequence %d: sequences must be 1..N", tenant, i, ev.Sequence)
				}
			}
		}
	})

	t.Run("EmptyBatchIsANoOp", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		res := e.ingest(t, store.IngestParams{})
		if len(res.Outcomes) != 0 || len(res.Tenants) != 0 {
			t.Fatalf("result = %+v", res)
		}
	})
}

func accept(seq int64) store.Outcome { return store.Outcome{Verdict: hub.Accept, Sequence: seq} }

func discard(reason string) store.Outcome { return store.Outcome{Verdict: hub.Discard, Reason: reason} }

func wantOutcomes(t testing.TB, res store.IngestResult, want ...store.Outcome) {
	t.Helper()
	if !reflect.DeepEqual(res.Outcomes, want) {
		t.Fatalf("outcomes\n got %+v\nwant %+v", res.Outcomes, want)
	}
}
