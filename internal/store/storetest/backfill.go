package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (e env) advance(t testing.TB, chunk int) store.AdvanceBackfillsResult {
	t.Helper()
	res, err := e.store.AdvanceBackfills(e.ctx, store.AdvanceBackfillsParams{Chunk: chunk})
	if err != nil {
		t.Fatalf("AdvanceBackfills: %v", err)
	}
	return res
}

func (e env) backfill(t testing.TB, tenant, id string) hub.Backfill {
	t.Helper()
	bs, err := e.store.Backfills(e.ctx, tenant, []string{id})
	if err != nil {
		t.Fatalf("Backfills: %v", err)
	}
	b, ok := bs[id]
	if !ok {
		t.Fatalf("Backfills(%s): subscription %s has none", tenant, id)
	}
	return b
}

// activate marks a stored subscription verified, as a passing probe does.
func (e env) activate(t testing.TB, tenant, id string) {
	t.Helper()
	s, err := e.store.GetSubscription(e.ctx, tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	s.VerificationState = hub.VerificationActive
	if _, err := e.store.UpdateSubscription(e.ctx, s); err != nil {
		t.Fatal(err)
	}
}

// claimedIDs claims every due job (batch 1000) and completes them, and
// returns the ce-ids in the order claimed (by sequence within the claim).
func (e env) claimedIDs(t testing.TB) []string {
	t.Helper()
	cs := e.claim(t, 1000)
	slices.SortFunc(cs, func(a, b store.Claimed) int { return int(a.Job.EventSequence - b.Job.EventSequence) })
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.Event.TenantID+"/"+c.Event.ID)
		e.complete(t, e.succeeded(c))
	}
	return ids
}

func counts(b hub.Backfill) string {
	return fmt.Sprintf("%s matched=%d queued=%d skipped=%d", b.State, b.Matched, b.Queued, b.Skipped)
}

func testBackfill(t *testing.T, open Opener) {
	// The scene: acme's events before since (old-*), in the window (bf-*,
	// one of another type), another tenant's, then a subscription asking
	// for the window.
	scene := func(t *testing.T, maxInFlight int) (env, time.Time) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "other", "")
		e.publish(t, "acme", "old", 2)
		e.clock.Advance(10 * time.Minute)
		since := e.clock.Now()
		var evs []hub.Event
		for i := range 5 {
			evs = append(evs, NewEvent("acme", fmt.Sprintf("bf-%d", i)))
			if i == 2 {
				x := NewEvent("acme", "account-created")
				x.Type, x.EventType = "studio.lerian.account.created", "account.created"
				evs = append(evs, x, NewEvent("other", "theirs"))
			}
		}
		e.ingest(t, store.IngestParams{Events: evs})
		e.clock.Advance(time.Minute)
		s := NewSubscription("acme", "sub_bf")
		s.MaxInFlight = maxInFlight
		if _, err := e.store.CreateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		b, err := e.store.StartBackfill(e.ctx, "acme", "sub_bf", since)
		if err != nil {
			t.Fatalf("StartBackfill: %v", err)
		}
		if b.State != hub.BackfillRunning || !b.Since.Equal(since) || b.StartedAt != nil || b.Queued != 0 {
			t.Fatalf("started backfill = %+v, want running since %v, not started", b, since)
		}
		return e, since
	}

	t.Run("QueuesTheWindowInOrderBeforeNewEvents", func(t *testing.T) {
		e, _ := scene(t, hub.MaxMaxInFlight)
		// Not verified yet: nothing starts.
		if res := e.advance(t, 2); len(res.Advanced) != 0 {
			t.Fatalf("advanced %d backfills of a subscription pending verification", len(res.Advanced))
		}
		e.activate(t, "acme", "sub_bf")
		// A new event after activation gets its job from matching, held
		// while the backfill runs.
		if res := e.publish(t, "acme", "new", 1); res.Jobs != 1 {
			t.Fatalf("new event made %d jobs, want 1", res.Jobs)
		}
		if got := e.claimedIDs(t); len(got) != 0 {
			t.Fatalf("claimed %v before the backfill walked anything, want nothing", got)
		}
		// Chunks of 2 events: bf-0 bf-1 | bf-2 account-created | bf-3 bf-4.
		res := e.advance(t, 2)
		if len(res.Advanced) != 1 || res.Queued != 2 || !res.More() {
			t.Fatalf("first chunk: %+v, want one backfill, 2 queued, more to do", res)
		}
		b := e.backfill(t, "acme", "sub_bf")
		if b.StartedAt == nil || b.UntilSequence == 0 || counts(b) != "running matched=2 queued=2 skipped=0" {
			t.Fatalf("after one chunk: %+v", b)
		}
		if got, want := e.claimedIDs(t), []string{"acme/bf-0", "acme/bf-1"}; !slices.Equal(got, want) {
			t.Fatalf("claimable after one chunk = %v, want %v (the new event waits)", got, want)
		}
		e.advance(t, 2)
		if got, want := e.claimedIDs(t), []string{"acme/bf-2"}; !slices.Equal(got, want) {
			t.Fatalf("claimable after two chunks = %v, want %v", got, want)
		}
		e.advance(t, 2)
		if got, want := e.claimedIDs(t), []string{"acme/bf-3", "acme/bf-4"}; !slices.Equal(got, want) {
			t.Fatalf("claimable after three chunks = %v, want %v", got, want)
		}
		// The window ends at the tenant's last event when the backfill
		// started: new-0, already queued by matching, is skipped.
		res = e.advance(t, 2)
		if res.Finished != 1 || res.More() {
			t.Fatalf("fourth chunk: %+v, want the backfill finished", res)
		}
		b = e.backfill(t, "acme", "sub_bf")
		if counts(b) != "done matched=6 queued=5 skipped=1" || b.FinishedAt == nil || b.Sequence != b.UntilSequence {
			t.Fatalf("finished backfill: %+v", b)
		}
		if got, want := e.claimedIDs(t), []string{"acme/new-00000"}; !slices.Equal(got, want) {
			t.Fatalf("claimable once done = %v, want %v", got, want)
		}
		if res := e.advance(t, 2); len(res.Advanced) != 0 {
			t.Fatalf("a done backfill advanced again: %+v", res)
		}
	})

	t.Run("OrderedSubscriptionNeverLetsANewEventOvertake", func(t *testing.T) {
		e, _ := scene(t, 1)
		e.activate(t, "acme", "sub_bf")
		e.publish(t, "acme", "new", 2)
		var order []string
		for range 20 {
			e.advance(t, 1)
			order = append(order, e.claimedIDs(t)...)
		}
		want := []string{"acme/bf-0", "acme/bf-1", "acme/bf-2", "acme/bf-3", "acme/bf-4", "acme/new-00000", "acme/new-00001"}
		if !slices.Equal(order, want) {
			t.Fatalf("delivered %v, want %v", order, want)
		}
	})

	t.Run("NeverQueuesAnEventTwice", func(t *testing.T) {
		e, since := scene(t, hub.MaxMaxInFlight)
		e.activate(t, "acme", "sub_bf")
		e.publish(t, "acme", "new", 1)
		for e.advance(t, 100).More() {
		}
		e.claimedIDs(t)
		// Asked again over the same window: every event it matches has a
		// job already (delivered, or queued by matching).
		if _, err := e.store.StartBackfill(e.ctx, "acme", "sub_bf", since); err != nil {
			t.Fatal(err)
		}
		if b := e.backfill(t, "acme", "sub_bf"); counts(b) != "running matched=0 queued=0 skipped=0" || b.StartedAt != nil {
			t.Fatalf("restarted backfill: %+v", b)
		}
		for e.advance(t, 100).More() {
		}
		if b := e.backfill(t, "acme", "sub_bf"); counts(b) != "done matched=6 queued=0 skipped=6" {
			t.Fatalf("second backfill: %s, want every match skipped", counts(b))
		}
		if got := e.claimedIDs(t); len(got) != 0 {
			t.Fatalf("claimed %v again", got)
		}
		jobs, err := e.store.ListJobs(e.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: "sub_bf", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 6 {
			t.Fatalf("subscription has %d jobs, want 6 (bf-0..4 and new-0, once each)", len(jobs))
		}
	})

	t.Run("EmptyWindowFinishesAtOnce", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 1)
		if _, err := e.store.StartBackfill(e.ctx, "acme", "sub_1", e.clock.Now()); err != nil {
			t.Fatal(err)
		}
		res := e.advance(t, 10)
		if res.Finished != 1 {
			t.Fatalf("empty window: %+v, want finished", res)
		}
		if res := e.publish(t, "acme", "new", 1); res.Jobs != 1 {
			t.Fatal("no job for the new event")
		}
		if got := e.claimedIDs(t); !slices.Equal(got, []string{"acme/new-00000"}) {
			t.Fatalf("after an empty backfill claimed %v", got)
		}
	})

	t.Run("OtherTenantsKeepFlowing", func(t *testing.T) {
		e, _ := scene(t, hub.MaxMaxInFlight)
		e.activate(t, "acme", "sub_bf")
		e.subscribe(t, "other", "sub_other", 1)
		e.advance(t, 2) // acme's backfill has queued jobs and is still running
		e.publish(t, "other", "live", 1)
		cs := e.claim(t, 2)
		var got []string
		for _, c := range cs {
			got = append(got, c.Event.TenantID+"/"+c.Event.ID)
		}
		slices.Sort(got)
		if want := []string{"acme/bf-0", "other/live-00000"}; !slices.Equal(got, want) {
			t.Fatalf("a claim of 2 during acme's backfill took %v, want %v (tenants interleave)", got, want)
		}
	})

	t.Run("ScopedToTheTenant", func(t *testing.T) {
		e, since := scene(t, 1)
		_, err := e.store.StartBackfill(e.ctx, "other", "sub_bf", since)
		wantCode(t, err, hub.ENOTFOUND)
		bs, err := e.store.Backfills(e.ctx, "other", []string{"sub_bf"})
		if err != nil || len(bs) != 0 {
			t.Fatalf("another tenant reads %v (%v)", bs, err)
		}
		bs, err = e.store.Backfills(e.ctx, "acme", []string{"sub_bf", "sub_none"})
		if err != nil || len(bs) != 1 {
			t.Fatalf("Backfills = %v (%v), want sub_bf's only", bs, err)
		}
	})
}
