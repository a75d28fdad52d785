package dispatch_test

import (
	"slices"
	"strconv"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/dispatch"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A subscription created with a backfill one hour back receives the
// tenant's matching retained events of that hour, in arrival order and
// signed like any delivery, then the events that arrived after it was
// verified: no new event overtakes the backfill, though the backfill is
// walked two events per maintenance pass with deliveries in between.
func TestBackfill_RetainedEventsInOrderThenNewOnes(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		r := newRig(t, d, rigOptions{cfg: func(c *dispatch.Config) {
			c.BackfillChunk, c.BackfillPassChunks = 2, 1 // a chunk of two events per maintenance pass
		}})
		// Before the window: not delivered.
		r.publish(event("acme", "ancient"))
		r.clock.Advance(30 * time.Minute)
		other := event("other", "theirs")
		nonMatching := event("acme", "account-created")
		nonMatching.Type, nonMatching.EventType = "studio.lerian.account.created", "account.created"
		if _, err := r.store.CreateTenant(r.ctx, store.CreateTenantParams{ID: "other", Name: "Other"}); err != nil {
			t.Fatal(err)
		}
		r.publish(event("acme", "bf-0"), event("acme", "bf-1"), nonMatching, other, event("acme", "bf-2"))
		r.clock.Advance(40 * time.Minute)

		// The subscription, created now with since one hour back, pending
		// verification.
		sink2 := newSink(t)
		s := storetest.NewSubscription("acme", "sub_bf")
		s.Destination = hub.Destination{Type: "webhook", URL: sink2.URL}
		if err := destination.SealSecrets(r.keyring, &s, hub.SubscriptionSecrets{Signing: []hub.SigningSecret{{Secret: r.secret}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.store.CreateSubscription(r.ctx, s); err != nil {
			t.Fatal(err)
		}
		if _, err := r.store.StartBackfill(r.ctx, "acme", "sub_bf", r.clock.Now().Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		r.publish(event("acme", "during-0")) // before verification: the backfill's
		r.maintain()
		r.drain()
		if got := sink2.got(); len(got) != 0 {
			t.Fatalf("an unverified subscription received %d deliveries", len(got))
		}

		s, err := r.store.GetSubscription(r.ctx, "acme", "sub_bf")
		if err != nil {
			t.Fatal(err)
		}
		s.VerificationState = hub.VerificationActive
		if _, err := r.store.UpdateSubscription(r.ctx, s); err != nil {
			t.Fatal(err)
		}
		r.publish(event("acme", "new-0"), event("acme", "new-1"))
		r.drain() // the new events' jobs wait for the backfill
		if got := sink2.got(); len(got) != 0 {
			t.Fatalf("received %d deliveries before the backfill started", len(got))
		}
		for range 10 {
			r.maintain()
			r.drain()
		}

		var ids []string
		var last int
		for i, req := range sink2.got() {
			h := req.header
			ids = append(ids, h.Get("X-Lerian-Event-Id"))
			seq, _ := strconv.Atoi(h.Get("X-Lerian-Sequence"))
			if seq <= last {
				t.Fatalf("delivery %d has sequence %d after %d", i, seq, last)
			}
			last = seq
			ts, _ := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
			want, err := destination.Sign([]string{r.secret}, h.Get("webhook-id"), ts, req.body)
			if err != nil || h.Get("webhook-signature") != want || h.Get("X-Lerian-Tenant-Id") != "acme" {
				t.Fatalf("delivery %d: signature %q, want %q (%v); tenant %q", i, h.Get("webhook-signature"), want, err, h.Get("X-Lerian-Tenant-Id"))
			}
		}
		want := []string{"bf-0", "bf-1", "bf-2", "during-0", "new-0", "new-1"}
		if !slices.Equal(ids, want) {
			t.Fatalf("delivered %v, want %v", ids, want)
		}
		bs, err := r.store.Backfills(r.ctx, "acme", []string{"sub_bf"})
		if err != nil {
			t.Fatal(err)
		}
		// new-0 and new-1 arrived before the backfill started (the next
		// maintenance pass): in its window, but matching queued them.
		if b := bs["sub_bf"]; b.State != hub.BackfillDone || b.Matched != 6 || b.Queued != 4 || b.Skipped != 2 {
			t.Fatalf("backfill = %+v, want done, 6 matched, 4 queued, 2 skipped", b)
		}
	})
}

func (r *rig) maintain() {
	r.t.Helper()
	if err := r.d.Maintain(r.ctx); err != nil {
		r.t.Fatal(err)
	}
}

// drain steps until a claim finds nothing due.
func (r *rig) drain() {
	r.t.Helper()
	for range 100 {
		if r.step() == 0 {
			return
		}
	}
	r.t.Fatal("still claiming after 100 steps")
}
