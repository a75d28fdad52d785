package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/apikey"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// NewSubscription returns a valid subscription of tenant with every field
// set, as the API would store it.
func NewSubscription(tenant, id string) hub.Subscription {
	return hub.Subscription{
		ID:       id,
		TenantID: tenant,
		Name:     "ledger-hooks",
		EventTypes: []hub.EventTypeRef{
			{Type: "transaction.posted", SchemaMajor: 1},
			{Type: "balance.config-changed", SchemaMajor: 2},
		},
		Destination: hub.Destination{
			Type: "webhook", URL: "https://example.com/hook",
			Headers:  map[string]string{"X-Custom": "v"},
			AuthType: hub.AuthHeader, AuthHeaderName: "X-Api-Key",
		},
		RetrySchedule:     []string{"5s", "1m"},
		MaxInFlight:       1,
		Enabled:           true,
		VerificationState: hub.VerificationPending,
		Secrets:           []byte{1, 2, 3, 0, 255},
	}
}

func testControlPlane(t *testing.T, open Opener) {
	t.Run("APIKeys", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		k, _ := apikey.New("acme", e.clock.Now())
		if err := e.store.CreateAPIKey(e.ctx, k); err != nil {
			t.Fatal(err)
		}
		got, err := e.store.GetAPIKey(e.ctx, k.ID)
		if err != nil || !reflect.DeepEqual(got, k) {
			t.Fatalf("GetAPIKey = %+v, %v; want %+v", got, err, k)
		}
		wantCode(t, e.store.DeleteAPIKey(e.ctx, "globex", k.ID), hub.ENOTFOUND)
		if err := e.store.DeleteAPIKey(e.ctx, "acme", k.ID); err != nil {
			t.Fatal(err)
		}
		_, err = e.store.GetAPIKey(e.ctx, k.ID)
		wantCode(t, err, hub.ENOTFOUND)
		wantCode(t, e.store.DeleteAPIKey(e.ctx, "acme", k.ID), hub.ENOTFOUND)
		orphan, _ := apikey.New("nobody", e.clock.Now())
		wantCode(t, e.store.CreateAPIKey(e.ctx, orphan), hub.ENOTFOUND)
	})

	t.Run("SubscriptionRoundTripAndTenancy", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		in := NewSubscription("acme", "sub_1")
		disabled := e.clock.Now().Add(-time.Hour)
		in.DisabledReason, in.DisabledAt = "auto-disabled", &disabled
		in.FailureSpan = &hub.FailureSpan{First: e.clock.Now().Add(-2 * time.Hour), Last: e.clock.Now().Add(-time.Hour)}
		created, err := e.store.CreateSubscription(e.ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		want := in
		want.Version, want.CreatedAt, want.UpdatedAt = 1, e.clock.Now(), e.clock.Now()
		if !reflect.DeepEqual(created, want) {
			t.Fatalf("created\n got %+v\nwant %+v", created, want)
		}
		got, err := e.store.GetSubscription(e.ctx, "acme", "sub_1")
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("get\n got %+v, %v\nwant %+v", got, err, want)
		}
		_, err = e.store.GetSubscription(e.ctx, "globex", "sub_1")
		wantCode(t, err, hub.ENOTFOUND)
		_, err = e.store.CreateSubscription(e.ctx, in)
		wantCode(t, err, hub.ECONFLICT)
		_, err = e.store.CreateSubscription(e.ctx, NewSubscription("nobody", "sub_2"))
		wantCode(t, err, hub.ENOTFOUND)

		plain := NewSubscription("acme", "sub_3")
		plain.RetrySchedule, plain.Destination.Headers, plain.Destination.AuthType, plain.Destination.AuthHeaderName = nil, nil, "", ""
		created, err = e.store.CreateSubscription(e.ctx, plain)
		if err != nil || created.RetrySchedule != nil || len(created.Destination.Headers) != 0 || created.FailureSpan != nil || created.DisabledAt != nil {
			t.Fatalf("nil fields round trip: %+v, %v", created, err)
		}
	})

	t.Run("ListPagesOneTenant", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		for i := range 5 {
			for _, tenant := range []string{"acme", "globex"} {
				if _, err := e.store.CreateSubscription(e.ctx, NewSubscription(tenant, fmt.Sprintf("sub_%s_%d", tenant, i))); err != nil {
					t.Fatal(err)
				}
			}
		}
		var ids []string
		for after := ""; ; {
			page, err := e.store.ListSubscriptions(e.ctx, store.ListSubscriptionsParams{TenantID: "acme", After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, s := range page {
				ids = append(ids, s.ID)
			}
			after = page[len(page)-1].ID
		}
		if fmt.Sprint(ids) != "[sub_acme_0 sub_acme_1 sub_acme_2 sub_acme_3 sub_acme_4]" {
			t.Fatalf("acme's subscriptions = %v", ids)
		}
	})

	t.Run("UpdateIsCompareAndSet", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		s, _ := e.store.CreateSubscription(e.ctx, NewSubscription("acme", "sub_1"))
		e.clock.Advance(time.Minute)
		s.Name, s.VerificationState, s.Enabled = "renamed", hub.VerificationActive, false
		s.RetrySchedule = nil
		updated, err := e.store.UpdateSubscription(e.ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if updated.Version != 2 || updated.Name != "renamed" || updated.VerificationState != hub.VerificationActive ||
			updated.Enabled || updated.RetrySchedule != nil || !updated.UpdatedAt.Equal(e.clock.Now()) || !updated.CreatedAt.Equal(s.CreatedAt) {
			t.Fatalf("updated = %+v", updated)
		}
		s.Name = "stale write"
		_, err = e.store.UpdateSubscription(e.ctx, s) // still Version 1
		wantCode(t, err, hub.ECONFLICT)
		if got, _ := e.store.GetSubscription(e.ctx, "acme", "sub_1"); got.Name != "renamed" {
			t.Fatalf("a stale write landed: %q", got.Name)
		}
		other := updated
		other.TenantID = "globex"
		_, err = e.store.UpdateSubscription(e.ctx, other)
		wantCode(t, err, hub.ENOTFOUND)
	})

	t.Run("DeleteHidesIt", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		s, _ := e.store.CreateSubscription(e.ctx, NewSubscription("acme", "sub_1"))
		wantCode(t, e.store.DeleteSubscription(e.ctx, "globex", "sub_1"), hub.ENOTFOUND)
		if err := e.store.DeleteSubscription(e.ctx, "acme", "sub_1"); err != nil {
			t.Fatal(err)
		}
		_, err := e.store.GetSubscription(e.ctx, "acme", "sub_1")
		wantCode(t, err, hub.ENOTFOUND)
		list, _ := e.store.ListSubscriptions(e.ctx, store.ListSubscriptionsParams{TenantID: "acme"})
		if len(list) != 0 {
			t.Fatalf("deleted subscription listed: %+v", list)
		}
		_, err = e.store.UpdateSubscription(e.ctx, s)
		wantCode(t, err, hub.ENOTFOUND)
		wantCode(t, e.store.DeleteSubscription(e.ctx, "acme", "sub_1"), hub.ENOTFOUND)
	})
}
