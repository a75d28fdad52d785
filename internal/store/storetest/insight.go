package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// operational subscribes tenant's id to an operational event type.
func (e env) operational(t testing.TB, tenant, id, eventType string) hub.Subscription {
	t.Helper()
	s := NewSubscription(tenant, id)
	s.VerificationState, s.MaxInFlight = hub.VerificationActive, 10
	s.EventTypes = []hub.EventTypeRef{{Type: eventType, SchemaMajor: 1}}
	out, err := e.store.CreateSubscription(e.ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// hubEvents are tenant's operational events of eventType, in arrival order.
func (e env) hubEvents(t testing.TB, tenant, eventType string) []hub.Event {
	t.Helper()
	var out []hub.Event
	for _, ev := range e.events(t, tenant) {
		if ev.EventType == eventType {
			out = append(out, ev)
		}
	}
	return out
}

func dataOf(t testing.TB, ev hub.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(ev.Data, &m); err != nil {
		t.Fatalf("operational event data %q: %v", ev.Data, err)
	}
	return m
}

func (e env) deadLetter(c store.Claimed) store.Completion {
	return store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobDeadLettered,
		DeadLetterReason: hub.DeadLetterExhausted, LastError: "destination answered 500", SubscriptionID: c.Job.SubscriptionID,
		Attempt: &hub.Attempt{ID: hub.NewID("att", e.clock.Now()), StartedAt: e.clock.Now(), StatusCode: 500,
			Error: "destination answered 500", Duration: 40 * time.Millisecond}}
}

func testOperational(t *testing.T, open Opener) {
	t.Run("DeadLetterEmitsAnEventDeliveredLikeAnyOther", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		e.subscribe(t, "acme", "sub_1", 10)
		e.operational(t, "acme", "sub_ops", hub.EventDeliveryDeadLettered)
		e.publish(t, "acme", "a", 1)
		cs := e.claim(t, 10)
		if len(cs) != 1 {
			t.Fatalf("claimed %d, want 1", len(cs))
		}
		e.complete(t, e.deadLetter(cs[0]))

		evs := e.hubEvents(t, "acme", hub.EventDeliveryDeadLettered)
		if len(evs) != 1 {
			t.Fatalf("%d hub.delivery.dead_lettered events, want 1", len(evs))
		}
		ev := evs[0]
		if ev.Type != "studio.lerian.hub.delivery.dead_lettered" || ev.Source != "//streaming-hub" || ev.SchemaVersion != "1.0.0" ||
			ev.SchemaMajor != 1 || ev.DataContentType != "application/json" || ev.Sequence != 2 {
			t.Fatalf("event = %+v", ev)
		}
		d := dataOf(t, ev)
		want := map[string]any{"subscription_id": "sub_1", "delivery_id": cs[0].Job.ID, "event_id": "a-00000",
			"event_type": "transaction.posted", "reason": "exhausted", "attempts": float64(1), "last_error": "destination answered 500"}
		for k, v := range want {
			if d[k] != v {
				t.Fatalf("data[%s] = %v, want %v (data %v)", k, d[k], v, d)
			}
		}
		if got := e.hubEvents(t, "globex", hub.EventDeliveryDeadLettered); len(got) != 0 {
			t.Fatalf("globex got %d operational events of acme's subscription", len(got))
		}

		// The operational subscription gets a job for it; its own dead
		// letter emits nothing (no cascade).
		ops := e.claim(t, 10)
		if len(ops) != 1 || ops[0].Job.SubscriptionID != "sub_ops" || ops[0].Event.ID != ev.ID {
			t.Fatalf("claimed %+v, want sub_ops's job for the operational event", ops)
		}
		e.complete(t, e.deadLetter(ops[0]))
		if got := e.hubEvents(t, "acme", hub.EventDeliveryDeadLettered); len(got) != 1 {
			t.Fatalf("%d dead-letter events after the operational event's own dead letter, want still 1", len(got))
		}
	})

	// The hub's own events are recorded in the catalog as they are
	// written, like ingested ones: the event types page shows when each
	// was last seen.
	t.Run("TheHubsOwnEventsAreSeenInTheCatalog", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 10)
		e.publish(t, "acme", "a", 1)
		cs := e.claim(t, 10)
		if len(cs) != 1 {
			t.Fatalf("claimed %d, want 1", len(cs))
		}
		e.clock.Advance(time.Minute)
		e.complete(t, e.deadLetter(cs[0]))
		now := e.clock.Now()
		s, err := e.store.GetSubscription(e.ctx, "acme", "sub_1")
		if err != nil {
			t.Fatal(err)
		}
		s.Enabled, s.DisabledReason, s.DisabledAt = false, "disabled through the API", &now
		if _, err := e.store.UpdateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.EmitOperational(e.ctx, []hub.Event{{TenantID: "acme", ID: "hub_drift_1", SpecVersion: "1.0",
			Type: hub.OperationalCEType(hub.EventTopicsDrift), EventType: hub.EventTopicsDrift, Source: hub.OperationalSource,
			Time: now.Format(time.RFC3339Nano), SchemaVersion: hub.OperationalSchemaVersion, SchemaMajor: 1,
			DataContentType: hub.DefaultContentType, Data: []byte(`{"detected":[],"resolved":[]}`)}}); err != nil {
			t.Fatal(err)
		}
		seen, err := e.store.ListTypesSeen(e.ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		last := map[string]time.Time{}
		for _, ts := range seen {
			if ts.SchemaMajor == 1 {
				last[ts.EventType] = ts.LastSeenAt
			}
		}
		for _, typ := range []string{hub.EventDeliveryDeadLettered, hub.EventSubscriptionDisabled, hub.EventTopicsDrift} {
			if at, ok := last[typ]; !ok || !at.Equal(now) {
				t.Errorf("%s@1 last seen %v (recorded: %v), want %v", typ, at, ok, now)
			}
		}
	})

	t.Run("FencedDeadLetterEmitsNothing", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 10)
		e.publish(t, "acme", "a", 1)
		cs := e.claim(t, 10)
		stale := e.deadLetter(cs[0])
		stale.LeaseToken = "not-the-lease"
		if res := e.complete(t, stale); len(res.Fenced) != 1 {
			t.Fatalf("fenced %v, want the stale completion", res.Fenced)
		}
		if got := e.hubEvents(t, "acme", hub.EventDeliveryDeadLettered); len(got) != 0 {
			t.Fatalf("%d events for a dead letter that was not written", len(got))
		}
	})

	t.Run("AutoDisableEmitsDisabledAndTheDeadLettersOfItsJobs", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 1)
		e.operational(t, "acme", "sub_ops", hub.EventSubscriptionDisabled)
		e.publish(t, "acme", "a", 2) // a-0 claimed, a-1 waits
		g := store.AutoDisable{Window: time.Hour, Spread: time.Minute}
		cs := e.claim(t, 1)
		first := e.failed(cs[0], e.clock.Now())
		first.Attempt.StartedAt = e.clock.Now().Add(-2 * time.Hour)
		res, err := e.store.CompleteJobs(e.ctx, store.CompleteParams{Completions: []store.Completion{first}, AutoDisable: &g})
		if err != nil || len(res.Disabled) != 0 {
			t.Fatalf("first failure: %+v, %v", res, err)
		}
		cs = e.claim(t, 1)
		if len(cs) != 1 || cs[0].Job.SubscriptionID != "sub_1" {
			t.Fatalf("claimed %+v", cs)
		}
		res, err = e.store.CompleteJobs(e.ctx, store.CompleteParams{Completions: []store.Completion{e.failed(cs[0], e.clock.Now().Add(time.Hour))}, AutoDisable: &g})
		if err != nil || len(res.Disabled) != 1 {
			t.Fatalf("second failure: %+v, %v; want sub_1 disabled", res, err)
		}
		dis := e.hubEvents(t, "acme", hub.EventSubscriptionDisabled)
		if len(dis) != 1 {
			t.Fatalf("%d disabled events, want 1", len(dis))
		}
		d := dataOf(t, dis[0])
		if d["subscription_id"] != "sub_1" || d["name"] != "ledger-hooks" || d["reason"] != res.Disabled[0].Reason || d["disabled_at"] == nil {
			t.Fatalf("disabled data %v", d)
		}
		// Its waiting jobs (the retry, and a-1) were dead-lettered with it.
		dead := e.hubEvents(t, "acme", hub.EventDeliveryDeadLettered)
		if len(dead) != 2 {
			t.Fatalf("%d dead-letter events, want the 2 waiting jobs'", len(dead))
		}
		for _, ev := range dead {
			if d := dataOf(t, ev); d["reason"] != "subscription_disabled" || d["subscription_id"] != "sub_1" {
				t.Fatalf("dead-letter data %v", d)
			}
		}
		ops := e.claim(t, 10)
		if len(ops) != 1 || ops[0].Job.SubscriptionID != "sub_ops" || ops[0].Event.EventType != hub.EventSubscriptionDisabled {
			t.Fatalf("claimed %+v, want sub_ops's job for the disabled event", ops)
		}
	})

	t.Run("PeriodicAutoDisableEmitsDisabled", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 1)
		e.publish(t, "acme", "a", 1)
		cs := e.claim(t, 1)
		f := e.failed(cs[0], e.clock.Now().Add(time.Hour))
		f.Attempt.StartedAt = e.clock.Now().Add(-time.Minute)
		e.complete(t, f, e.failed(cs[0], e.clock.Now()))
		e.clock.Advance(2 * time.Hour)
		ds, err := e.store.AutoDisable(e.ctx, store.AutoDisable{Window: time.Hour, Spread: 0})
		if err != nil || len(ds) != 1 {
			t.Fatalf("AutoDisable = %v, %v", ds, err)
		}
		if got := e.hubEvents(t, "acme", hub.EventSubscriptionDisabled); len(got) != 1 {
			t.Fatalf("%d disabled events, want 1", len(got))
		}
	})

	t.Run("PatchDisableAndReEnableEmitDisabledAndRecovered", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		s := e.subscribe(t, "acme", "sub_1", 1)
		now := e.clock.Now()
		s.Enabled, s.DisabledReason, s.DisabledAt = false, "disabled through the API", &now
		s, err := e.store.UpdateSubscription(e.ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		// A change that does not move enabled tells nothing.
		s.Name = "renamed"
		if s, err = e.store.UpdateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		s.Enabled, s.DisabledReason, s.DisabledAt = true, "", nil
		if _, err = e.store.UpdateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		dis := e.hubEvents(t, "acme", hub.EventSubscriptionDisabled)
		rec := e.hubEvents(t, "acme", hub.EventSubscriptionRecovered)
		if len(dis) != 1 || len(rec) != 1 {
			t.Fatalf("%d disabled and %d recovered events, want 1 each", len(dis), len(rec))
		}
		if d := dataOf(t, dis[0]); d["reason"] != "disabled through the API" || d["name"] != "ledger-hooks" {
			t.Fatalf("disabled data %v", d)
		}
		if d := dataOf(t, rec[0]); d["subscription_id"] != "sub_1" || d["name"] != "renamed" {
			t.Fatalf("recovered data %v", d)
		}
		if dis[0].Sequence >= rec[0].Sequence {
			t.Fatalf("sequences %d, %d: disabled comes first", dis[0].Sequence, rec[0].Sequence)
		}
	})

	t.Run("DeleteAndPoisonDeadLettersEmitEvents", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 1)
		e.subscribe(t, "acme", "sub_2", 1)
		e.publish(t, "acme", "a", 2) // one job each per event: 4 jobs
		cs := e.claim(t, 10)         // one in flight per subscription
		if len(cs) != 2 {
			t.Fatalf("claimed %d, want 2", len(cs))
		}
		if err := e.store.DeleteSubscription(e.ctx, "acme", "sub_1"); err != nil {
			t.Fatal(err)
		}
		if got := e.hubEvents(t, "acme", hub.EventDeliveryDeadLettered); len(got) != 1 || dataOf(t, got[0])["reason"] != "subscription_deleted" {
			t.Fatalf("after delete: %d events, want sub_1's waiting job (subscription_deleted)", len(got))
		}
		e.clock.Advance(2 * time.Minute) // the leases expire
		r, err := e.store.RecoverLeases(e.ctx, store.RecoverParams{PoisonThreshold: 1, Limit: 10})
		if err != nil || r.Poisoned != 2 {
			t.Fatalf("RecoverLeases = %+v, %v", r, err)
		}
		reasons := map[string]int{}
		for _, ev := range e.hubEvents(t, "acme", hub.EventDeliveryDeadLettered) {
			reasons[dataOf(t, ev)["reason"].(string)]++
		}
		if reasons["poison"] != 2 {
			t.Fatalf("dead-letter reasons %v, want 2 poison", reasons)
		}
	})

	t.Run("OperationalTypesAreValidInSubscriptions", func(t *testing.T) {
		for _, typ := range hub.OperationalTypes {
			if err := hub.ValidateEventTypes([]hub.EventTypeRef{{Type: typ, SchemaMajor: 1}}); err != nil {
				t.Fatalf("%s: %v", typ, err)
			}
		}
		if err := hub.ValidateEventTypes([]hub.EventTypeRef{{Type: "hub.subscription", SchemaMajor: 1}}); err == nil {
			t.Fatal("hub.subscription accepted")
		}
	})
}

func testHealth(t *testing.T, open Opener) {
	t.Run("RollupsBucketPruneAndBoundTheWindow", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 10)
		e.subscribe(t, "acme", "sub_2", 10)
		start := e.clock.Now().Truncate(store.RollupWidth)
		e.clock.Set(start)
		e.publish(t, "acme", "a", 3)
		cs := e.claim(t, 10)
		var sub1 []store.Claimed
		for _, c := range cs {
			if c.Job.SubscriptionID == "sub_1" {
				sub1 = append(sub1, c)
			}
		}
		ok0, ok1 := e.succeeded(sub1[0]), e.succeeded(sub1[1])
		ok1.Attempt.Duration = 400 * time.Millisecond
		ok1.Attempt.StartedAt = start.Add(time.Minute) // same bucket
		fail := e.failed(sub1[2], start.Add(time.Hour))
		fail.Attempt.StartedAt = start.Add(store.RollupWidth + time.Second) // the next bucket
		fail.Attempt.Duration = 2 * time.Second
		e.complete(t, ok0, ok1, fail)

		rs, err := e.store.ListRollups(e.ctx, "sub_1", start)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 2 || !rs[0].Start.Equal(start) || rs[0].Successes != 2 || rs[0].Failures != 0 ||
			!rs[1].Start.Equal(start.Add(store.RollupWidth)) || rs[1].Failures != 1 || rs[1].LastError != "destination answered 500" {
			t.Fatalf("rollups %+v", rs)
		}
		if other, _ := e.store.ListRollups(e.ctx, "sub_2", start); len(other) != 0 {
			t.Fatalf("sub_2 has rollups %+v without attempts", other)
		}

		// Another batch adds to the same bucket.
		e.clock.Set(start.Add(store.RollupWidth + 2*time.Minute))
		e.publish(t, "acme", "b", 1)
		for _, c := range e.claim(t, 10) {
			if c.Job.SubscriptionID == "sub_1" && c.Event.ID == "b-00000" {
				e.complete(t, e.succeeded(c))
			}
		}
		rs, _ = e.store.ListRollups(e.ctx, "sub_1", start)
		if len(rs) != 2 || rs[1].Successes != 1 || rs[1].Failures != 1 || rs[1].LastSuccessAt == nil || rs[1].LastFailureAt == nil {
			t.Fatalf("rollups after a second batch %+v", rs)
		}

		h := store.Summarize(rs, e.clock.Now(), time.Hour)
		if h.Attempts != 4 || h.Successes != 3 || h.Failures != 1 || *h.SuccessRate != 0.75 || h.LastError != "destination answered 500" {
			t.Fatalf("summary %+v", h)
		}
		if len(h.Buckets) > store.MaxHealthBuckets || h.P50 == nil || *h.P99 < 1000 {
			t.Fatalf("summary buckets %d, p50 %v, p99 %v", len(h.Buckets), h.P50, h.P99)
		}
		var total int64
		for _, b := range h.Buckets {
			total += b.Successes + b.Failures
		}
		if total != 4 {
			t.Fatalf("buckets hold %d attempts, want 4", total)
		}

		// A window that starts after the first bucket leaves it out.
		e.clock.Set(start.Add(3 * store.RollupWidth))
		from := store.HealthFrom(e.clock.Now(), 2*store.RollupWidth)
		rs, _ = e.store.ListRollups(e.ctx, "sub_1", from)
		if h := store.Summarize(rs, e.clock.Now(), 2*store.RollupWidth); h.Attempts != 2 {
			t.Fatalf("2-bucket window: %d attempts, want the second bucket's 2", h.Attempts)
		}
		// 30 days in at most 100 bars.
		if h := store.Summarize(nil, e.clock.Now(), 720*time.Hour); len(h.Buckets) > store.MaxHealthBuckets || len(h.Buckets) < 90 || h.SuccessRate != nil {
			t.Fatalf("720h window: %d buckets, rate %v", len(h.Buckets), h.SuccessRate)
		}

		n, err := e.store.PruneRollups(e.ctx, start.Add(store.RollupWidth))
		if err != nil || n != 1 {
			t.Fatalf("PruneRollups = %d, %v; want the first bucket", n, err)
		}
		if rs, _ = e.store.ListRollups(e.ctx, "sub_1", time.Time{}); len(rs) != 1 {
			t.Fatalf("after pruning: %+v", rs)
		}
		b, err := e.store.Backlog(e.ctx, "sub_1")
		if err != nil || b[hub.JobPending] != 1 || b[hub.JobInFlight] != 0 || b[hub.JobDeadLettered] != 0 {
			t.Fatalf("backlog %v, %v; want the failed job pending", b, err)
		}
	})

	t.Run("HubRollupsSumEverySubscriptionPerBucket", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		e.subscribe(t, "acme", "sub_a", 10)
		e.subscribe(t, "globex", "sub_g", 10)
		start := e.clock.Now().Truncate(store.RollupWidth)
		e.clock.Set(start)
		e.publish(t, "acme", "a", 2)
		e.publish(t, "globex", "g", 2)
		var done []store.Completion
		var globex int
		for _, c := range e.claim(t, 10) {
			cp := e.succeeded(c)
			if c.Job.SubscriptionID == "sub_g" {
				if globex++; globex == 2 {
					cp = e.failed(c, start.Add(time.Hour))
					cp.Attempt.StartedAt = start.Add(store.RollupWidth + time.Second) // the next bucket
					cp.Attempt.Duration = 2 * time.Second
				}
			} else {
				cp.Attempt.Duration = 400 * time.Millisecond
			}
			done = append(done, cp)
		}
		if len(done) != 4 {
			t.Fatalf("claimed %d jobs, want 4", len(done))
		}
		e.complete(t, done...)

		rs, err := e.store.ListHubRollups(e.ctx, start)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 2 || !rs[0].Start.Equal(start) || rs[0].Successes != 3 || rs[0].Failures != 0 ||
			!rs[1].Start.Equal(start.Add(store.RollupWidth)) || rs[1].Successes != 0 || rs[1].Failures != 1 ||
			rs[0].LastSuccessAt == nil || rs[1].LastFailureAt == nil || rs[0].SubscriptionID != "" {
			t.Fatalf("hub rollups %+v", rs)
		}
		var hist int64
		for _, c := range rs[0].Latency {
			hist += c
		}
		if hist != 3 || rs[0].Latency[0] != 1 {
			t.Fatalf("first bucket's latency histogram %v: want 3 attempts, one under 10 ms", rs[0].Latency)
		}
		if rs, _ = e.store.ListHubRollups(e.ctx, start.Add(store.RollupWidth)); len(rs) != 1 || rs[0].Failures != 1 {
			t.Fatalf("from the second bucket: %+v", rs)
		}
		h := store.Summarize(rs, start.Add(store.RollupWidth+time.Minute), time.Hour)
		last := h.Buckets[len(h.Buckets)-1]
		if h.Width != store.RollupWidth || last.Failures != 1 || last.P99 == nil || *last.P99 < 1000 || h.Buckets[0].P99 != nil {
			t.Fatalf("summary width %v, last bucket %+v", h.Width, last)
		}
	})
}

func testLookups(t *testing.T, open Opener) {
	// A job as read carries its event's type (docs/console.md, names before ids),
	// on every read that lists or gets jobs; a job whose event retention
	// removed still lists, with no type.
	t.Run("JobsCarryTheirEventsType", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 10)
		e.publish(t, "acme", "a", 2)
		cs := e.claim(t, 2)
		slices.SortFunc(cs, func(a, b store.Claimed) int { return int(a.Job.EventSequence - b.Job.EventSequence) })
		e.complete(t, e.succeeded(cs[0])) // a-00000's job succeeds; a-00001's stays in flight
		e.clock.Advance(8 * 24 * time.Hour)
		if r := e.prune(t, store.PruneParams{EventsBefore: e.clock.Now().Add(-7 * 24 * time.Hour)}); r.Events != 1 {
			t.Fatalf("Prune = %+v, want a-00000's event gone", r)
		}
		gone, live := cs[0].Job.ID, cs[1].Job.ID
		wantType := NewEvent("acme", "x").EventType
		check := func(what string, jobs []hub.Job, n int) {
			t.Helper()
			if len(jobs) != n {
				t.Fatalf("%s: %d jobs, want %d", what, len(jobs), n)
			}
			for _, j := range jobs {
				want := wantType
				if j.ID == gone {
					want = ""
				}
				if j.EventType != want {
					t.Fatalf("%s: job %s (event %s) has event type %q, want %q", what, j.ID, j.EventID, j.EventType, want)
				}
			}
		}
		listed, err := e.store.ListJobs(e.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: "sub_1"})
		if err != nil {
			t.Fatal(err)
		}
		check("ListJobs", listed, 2)
		for _, p := range []store.SearchJobsParams{{}, {SubscriptionID: "sub_1"}, {EventID: "a-00001"}, {EventID: "a-00000"}} {
			p.TenantID, p.Limit = "acme", 10
			found, err := e.store.SearchJobs(e.ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			n := 2
			if p.EventID != "" {
				n = 1
			}
			check(fmt.Sprintf("SearchJobs(%+v)", p), found, n)
		}
		for _, id := range []string{gone, live} {
			j, _ := e.job(t, "acme", id)
			check("GetJob", []hub.Job{j}, 1)
		}
		_, jobs, err := e.store.GetEvent(e.ctx, "acme", "a-00001")
		if err != nil {
			t.Fatal(err)
		}
		check("GetEvent", jobs, 1)
		e.complete(t, e.succeeded(cs[1]))
		fresh, err := e.store.ReplayJob(e.ctx, "acme", live, "admin")
		if err != nil || fresh.EventType != wantType {
			t.Fatalf("ReplayJob = %+v, %v; want the fresh job with its event's type", fresh, err)
		}
	})

	t.Run("EventsTypesDeliveriesAndKeys", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		e.subscribe(t, "acme", "sub_1", 10)
		e.subscribe(t, "acme", "sub_2", 10)
		e.subscribe(t, "globex", "sub_g", 10)
		t0 := e.clock.Now()
		e.publish(t, "acme", "a", 2)
		e.clock.Advance(time.Hour)
		t1 := e.clock.Now()
		e.publish(t, "acme", "b", 1)
		e.publish(t, "globex", "a", 1)
		v2 := NewEvent("acme", "v2-0")
		v2.SchemaMajor, v2.SchemaVersion, v2.Source = 2, "2.0.0", "//midaz/other"
		e.ingest(t, store.IngestParams{Events: []hub.Event{v2}})

		ev, jobs, err := e.store.GetEvent(e.ctx, "acme", "a-00001")
		if err != nil || ev.ID != "a-00001" || len(jobs) != 2 {
			t.Fatalf("GetEvent = %v, %d jobs, %v", ev.ID, len(jobs), err)
		}
		if _, _, err := e.store.GetEvent(e.ctx, "globex", "b-00000"); codeOf(err) != hub.ENOTFOUND {
			t.Fatalf("another tenant's event: %v", err)
		}

		all, err := e.store.SearchJobs(e.ctx, store.SearchJobsParams{TenantID: "acme", Limit: 100})
		if err != nil || len(all) != 6 {
			t.Fatalf("SearchJobs(acme) = %d jobs, %v; want 6", len(all), err)
		}
		if !slices.IsSortedFunc(all, func(a, b hub.Job) int { return -compare(a.ID, b.ID) }) {
			t.Fatal("not newest first")
		}
		page, _ := e.store.SearchJobs(e.ctx, store.SearchJobsParams{TenantID: "acme", Limit: 2})
		next, _ := e.store.SearchJobs(e.ctx, store.SearchJobsParams{TenantID: "acme", Limit: 2, Before: page[1].ID})
		if len(page) != 2 || len(next) != 2 || next[0].ID != all[2].ID {
			t.Fatal("paging by id does not continue where the page ended")
		}
		for _, c := range []struct {
			p    store.SearchJobsParams
			want int
		}{
			{store.SearchJobsParams{SubscriptionID: "sub_1"}, 3},
			{store.SearchJobsParams{EventID: "a-00000"}, 2},
			{store.SearchJobsParams{EventID: "a-00000", SubscriptionID: "sub_2"}, 1},
			{store.SearchJobsParams{Status: hub.JobPending}, 6},
			{store.SearchJobsParams{Status: hub.JobSucceeded}, 0},
			{store.SearchJobsParams{Since: t1}, 2},
			{store.SearchJobsParams{Until: t1}, 4},
			{store.SearchJobsParams{Since: t0, Until: t1}, 4},
			{store.SearchJobsParams{SubscriptionID: "sub_g"}, 0},
		} {
			c.p.TenantID, c.p.Limit = "acme", 100
			got, err := e.store.SearchJobs(e.ctx, c.p)
			if err != nil || len(got) != c.want {
				t.Fatalf("SearchJobs(%+v) = %d, %v; want %d", c.p, len(got), err, c.want)
			}
		}

		seen, err := e.store.ListTypesSeen(e.ctx, "acme")
		if err != nil || len(seen) != 2 || seen[0].SchemaMajor != 1 || seen[1].SchemaMajor != 2 ||
			seen[1].Source != "//midaz/other" || !seen[0].FirstSeenAt.Equal(t0) {
			t.Fatalf("types seen %+v, %v", seen, err)
		}
		if g, _ := e.store.ListTypesSeen(e.ctx, "globex"); len(g) != 1 {
			t.Fatalf("globex types %+v", g)
		}
		e.clock.Advance(2 * time.Minute)
		e.publish(t, "acme", "c", 1)
		seen, _ = e.store.ListTypesSeen(e.ctx, "acme")
		if !seen[0].LastSeenAt.Equal(e.clock.Now()) || !seen[0].FirstSeenAt.Equal(t0) {
			t.Fatalf("after another event: %+v", seen[0])
		}

		k := hub.APIKey{ID: "key_1", TenantID: "acme", Hash: []byte("h"), CreatedAt: t0}
		if err := e.store.CreateAPIKey(e.ctx, k); err != nil {
			t.Fatal(err)
		}
		keys, err := e.store.ListAPIKeys(e.ctx, "acme")
		if err != nil || len(keys) != 1 || keys[0].LastUsedAt != nil || keys[0].Hash != nil {
			t.Fatalf("keys %+v, %v", keys, err)
		}
		used := e.clock.Now()
		for i := 0; i < 3; i++ { // within a minute: only the first writes
			if err := e.store.TouchAPIKey(e.ctx, "key_1", used.Add(time.Duration(i)*10*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		keys, _ = e.store.ListAPIKeys(e.ctx, "acme")
		if keys[0].LastUsedAt == nil || !keys[0].LastUsedAt.Equal(used) {
			t.Fatalf("last used %v, want %v", keys[0].LastUsedAt, used)
		}
		e.store.TouchAPIKey(e.ctx, "key_1", used.Add(time.Minute))
		keys, _ = e.store.ListAPIKeys(e.ctx, "acme")
		if !keys[0].LastUsedAt.Equal(used.Add(time.Minute)) {
			t.Fatalf("a minute later: last used %v", keys[0].LastUsedAt)
		}
		if g, _ := e.store.ListAPIKeys(e.ctx, "globex"); len(g) != 0 {
			t.Fatalf("globex sees keys %+v", g)
		}

		// Manifests: a good fetch is kept; a failed one only sets the error.
		at := e.clock.Now()
		if err := e.store.RecordManifestFetch(e.ctx, "http://m/1", at, []byte(`{"v":1}`), ""); err != nil {
			t.Fatal(err)
		}
		if err := e.store.RecordManifestFetch(e.ctx, "http://m/1", at.Add(time.Minute), nil, "connection refused"); err != nil {
			t.Fatal(err)
		}
		ms, err := e.store.ListManifests(e.ctx)
		if err != nil || len(ms) != 1 || string(ms[0].Manifest) != `{"v":1}` || ms[0].LastError != "connection refused" ||
			!ms[0].LastSuccessAt.Equal(at) || !ms[0].LastFetchedAt.Equal(at.Add(time.Minute)) {
			t.Fatalf("manifests %+v, %v", ms, err)
		}
	})
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
