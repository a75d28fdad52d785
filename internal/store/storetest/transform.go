package storetest

import (
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// testTransform: a subscription's transform
// (docs/filters-and-transforms.md) is stored as
// written, updated, cleared and handed to the dispatcher with the claimed
// job.
func testTransform(t *testing.T, open Opener) {
	const program = "{\n\tkind: .type,\n\tamount: (.data.amount // 0),\n\tnote: \"ação \\(.id)\"\n}"
	t.Run("RoundTrip", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		s := NewSubscription("acme", "sub_t")
		s.Transform = program
		created, err := e.store.CreateSubscription(e.ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if created.Transform != program {
			t.Fatalf("create answered transform %q", created.Transform)
		}
		got, err := e.store.GetSubscription(e.ctx, "acme", "sub_t")
		if err != nil || got.Transform != program {
			t.Fatalf("read transform %q, %v", got.Transform, err)
		}
		list, err := e.store.ListSubscriptions(e.ctx, store.ListSubscriptionsParams{TenantID: "acme"})
		if err != nil || len(list) != 1 || list[0].Transform != program {
			t.Fatalf("listed %+v, %v", list, err)
		}
		got.Transform = ".data"
		updated, err := e.store.UpdateSubscription(e.ctx, got)
		if err != nil || updated.Transform != ".data" {
			t.Fatalf("after update: transform %q, %v", updated.Transform, err)
		}
		updated.Transform = ""
		cleared, err := e.store.UpdateSubscription(e.ctx, updated)
		if err != nil || cleared.Transform != "" {
			t.Fatalf("after clearing: transform %q, %v", cleared.Transform, err)
		}
		// A subscription made without one has none.
		plain, err := e.store.CreateSubscription(e.ctx, NewSubscription("acme", "sub_plain"))
		if err != nil || plain.Transform != "" {
			t.Fatalf("a plain subscription has transform %q, %v", plain.Transform, err)
		}
	})

	t.Run("ClaimCarriesTransform", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		s := NewSubscription("acme", "sub_t")
		s.VerificationState, s.Transform = hub.VerificationActive, program
		if _, err := e.store.CreateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		e.publish(t, "acme", "ev", 1)
		claimed, err := e.store.ClaimJobs(e.ctx, store.ClaimParams{Batch: 4, Lease: 30e9})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claimed %d jobs, %v", len(claimed), err)
		}
		if got := claimed[0].Subscription.Transform; got != program {
			t.Fatalf("claimed subscription's transform %q", got)
		}
	})
}
