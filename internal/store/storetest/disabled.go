package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// testDisabled: the list of subscriptions the hub disabled comes from one
// query across tenants, most recently disabled first, without the enabled,
// the disabled by hand (no reason) or the deleted.
func testDisabled(t *testing.T, open Opener) {
	e := setup(t, open, store.Options{})
	e.tenant(t, "a", "")
	e.tenant(t, "b", "")
	disable := func(tenant, id, reason string, at time.Time, enabled bool) {
		t.Helper()
		s := e.subscribe(t, tenant, id, 1)
		s.Enabled, s.DisabledReason = enabled, reason
		if reason != "" {
			s.DisabledAt = &at
		}
		if _, err := e.store.UpdateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	now := e.clock.Now()
	disable("a", "sub_old", "auto-disabled: failing for 5 days", now.Add(-2*time.Hour), false)
	disable("b", "sub_new", "verification probe failed: timeout", now.Add(-time.Hour), false)
	disable("a", "sub_hand", "", now, false)
	disable("b", "sub_live", "", now, true)
	disable("a", "sub_gone", "auto-disabled", now, false)
	if err := e.store.DeleteSubscription(e.ctx, "a", "sub_gone"); err != nil {
		t.Fatal(err)
	}

	got, err := e.store.ListDisabledSubscriptions(e.ctx, store.ListDisabledSubscriptionsParams{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range got {
		ids = append(ids, s.TenantID+"/"+s.ID+": "+s.DisabledReason)
	}
	want := []string{"b/sub_new: verification probe failed: timeout", "a/sub_old: auto-disabled: failing for 5 days"}
	if !slices.Equal(ids, want) {
		t.Fatalf("disabled = %q, want %q", ids, want)
	}
	if got, err := e.store.ListDisabledSubscriptions(e.ctx, store.ListDisabledSubscriptionsParams{Limit: 1}); err != nil || len(got) != 1 || got[0].ID != "sub_new" {
		t.Fatalf("limit 1: %+v, %v", got, err)
	}
}

// testDisabledPages: paging the disabled subscriptions one at a time from
// each page's last one gives each exactly once, in the same order as one
// page: the most recent first, ties by id, those without a time last.
func testDisabledPages(t *testing.T, open Opener) {
	e := setup(t, open, store.Options{})
	e.tenant(t, "a", "")
	e.tenant(t, "b", "")
	now := e.clock.Now()
	disable := func(tenant, id string, at *time.Time) {
		t.Helper()
		s := e.subscribe(t, tenant, id, 1)
		s.Enabled, s.DisabledReason, s.DisabledAt = false, "auto-disabled", at
		if _, err := e.store.UpdateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	earlier, same := now.Add(-time.Hour), now.Add(-time.Minute)
	disable("a", "sub_1", &earlier)
	disable("b", "sub_4", nil)
	disable("b", "sub_3", &same)
	disable("a", "sub_2", &same)
	disable("a", "sub_5", nil)
	disable("b", "sub_0", &now)
	want := []string{"sub_0", "sub_2", "sub_3", "sub_1", "sub_4", "sub_5"}

	all, err := e.store.ListDisabledSubscriptions(e.ctx, store.ListDisabledSubscriptionsParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range all {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("one page = %q, want %q", ids, want)
	}
	ids = nil
	p := store.ListDisabledSubscriptionsParams{Limit: 1}
	for range len(want) + 1 {
		got, err := e.store.ListDisabledSubscriptions(e.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		last := got[len(got)-1]
		ids = append(ids, last.ID)
		p.After = &store.DisabledPosition{At: last.DisabledAt, ID: last.ID}
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("page by page = %q, want %q", ids, want)
	}
}
