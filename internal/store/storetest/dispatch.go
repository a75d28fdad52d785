package storetest

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// subscribe stores a deliverable subscription of tenant to
// transaction.posted v1.
func (e env) subscribe(t testing.TB, tenant, id string, maxInFlight int) hub.Subscription {
	t.Helper()
	s := NewSubscription(tenant, id)
	s.VerificationState, s.MaxInFlight = hub.VerificationActive, maxInFlight
	out, err := e.store.CreateSubscription(e.ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// publish ingests n events of tenant with ids prefix-0..n-1.
func (e env) publish(t testing.TB, tenant, prefix string, n int) store.IngestResult {
	t.Helper()
	var total store.IngestResult
	for start := 0; start < n; start += 1000 {
		var evs []hub.Event
		for i := start; i < min(n, start+1000); i++ {
			evs = append(evs, NewEvent(tenant, fmt.Sprintf("%s-%05d", prefix, i)))
		}
		res := e.ingest(t, store.IngestParams{Events: evs})
		total.Outcomes = append(total.Outcomes, res.Outcomes...)
		total.Jobs += res.Jobs
	}
	return total
}

func (e env) claim(t testing.TB, batch int) []store.Claimed {
	t.Helper()
	c, err := e.store.ClaimJobs(e.ctx, store.ClaimParams{Batch: batch, Lease: time.Minute})
	if err != nil {
		t.Fatalf("ClaimJobs: %v", err)
	}
	return c
}

func (e env) complete(t testing.TB, cs ...store.Completion) store.CompleteResult {
	t.Helper()
	res, err := e.store.CompleteJobs(e.ctx, store.CompleteParams{Completions: cs})
	if err != nil {
		t.Fatalf("CompleteJobs: %v", err)
	}
	return res
}

func (e env) job(t testing.TB, tenant, id string) (hub.Job, []hub.Attempt) {
	t.Helper()
	j, as, err := e.store.GetJob(e.ctx, tenant, id)
	if err != nil {
		t.Fatalf("GetJob: %v", err)
	}
	return j, as
}

// succeeded is the completion of a 200 answer.
func (e env) succeeded(c store.Claimed) store.Completion {
	return store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobSucceeded,
		SubscriptionID: c.Job.SubscriptionID,
		Attempt:        &hub.Attempt{ID: hub.NewID("att", e.clock.Now()), StartedAt: e.clock.Now(), StatusCode: 200, Duration: 3 * time.Millisecond}}
}

// failed is the completion of a 500 answer, retried at next.
func (e env) failed(c store.Claimed, next time.Time) store.Completion {
	return store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: hub.JobPending,
		NextAttemptAt: next, LastError: "destination answered 500", SubscriptionID: c.Job.SubscriptionID,
		Attempt: &hub.Attempt{ID: hub.NewID("att", e.clock.Now()), StartedAt: e.clock.Now(), StatusCode: 500, Error: "destination answered 500"}}
}

func seqs(cs []store.Claimed) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s#%d", c.Job.TenantID, c.Job.EventSequence))
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

func testDispatch(t *testing.T, open Opener) {
	testLeases(t, open)
	t.Run("MatchingCreatesJobsOnlyForDeliverableSubscriptions", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		e.subscribe(t, "acme", "sub_wants", 1)
		off := NewSubscription("acme", "sub_disabled")
		off.VerificationState, off.Enabled = hub.VerificationActive, false
		pending := NewSubscription("acme", "sub_unverified")
		v2 := NewSubscription("acme", "sub_v2")
		v2.VerificationState, v2.EventTypes = hub.VerificationActive, []hub.EventTypeRef{{Type: "transaction.posted", SchemaMajor: 2}}
		other := NewSubscription("globex", "sub_globex")
		other.VerificationState = hub.VerificationActive
		for _, s := range []hub.Subscription{off, pending, v2, other} {
			if _, err := e.store.CreateSubscription(e.ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		acct := NewEvent("acme", "acct-1")
		acct.Type, acct.EventType = "studio.lerian.account.created", "account.created"
		res := e.ingest(t, store.IngestParams{Events: []hub.Event{NewEvent("acme", "tx-1"), acct, NewEvent("acme", "tx-1")}})
		if res.Jobs != 1 {
			t.Fatalf("jobs = %d, want 1: only sub_wants matches transaction.posted v1 once", res.Jobs)
		}
		c := e.claim(t, 16)
		if len(c) != 1 || c[0].Job.SubscriptionID != "sub_wants" || c[0].Job.EventID != "tx-1" || c[0].Job.EventSequence != 1 {
			t.Fatalf("claimed %+v", c)
		}
		// What the attempt needs comes with the claim.
		if c[0].Event.ID != "tx-1" || string(c[0].Event.Data) != `{"id":"tx-1"}` || c[0].Subscription.Destination.URL != "https://example.com/hook" ||
			string(c[0].Subscription.Secrets) != "\x01\x02\x03\x00\xff" || c[0].Job.Status != hub.JobInFlight || c[0].LeaseToken == "" {
			t.Fatalf("claim lacks its event or subscription: %+v", c[0])
		}
		if res := e.ingest(t, store.IngestParams{Events: []hub.Event{NewEvent("globex", "g-1")}}); res.Jobs != 1 {
			t.Fatalf("globex: %d jobs", res.Jobs)
		}
		if res := e.ingest(t, store.IngestParams{Events: []hub.Event{acct}}); res.Jobs != 0 {
			t.Fatalf("an event nobody wants made %d jobs", res.Jobs)
		}
	})

	t.Run("OneAtATimeInArrivalOrderAndAFailureDoesNotBlock", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 1)
		e.publish(t, "acme", "e", 4)
		first := e.claim(t, 16)
		if seqs(first) != "[acme#1]" {
			t.Fatalf("first claim %s, want only the oldest (max_in_flight 1)", seqs(first))
		}
		if more := e.claim(t, 16); len(more) != 0 {
			t.Fatalf("a second job of the subscription went in flight: %s", seqs(more))
		}
		e.complete(t, e.failed(first[0], e.clock.Now().Add(time.Hour)))
		second := e.claim(t, 16)
		if seqs(second) != "[acme#2]" {
			t.Fatalf("after a failure the next claim is %s, want #2 (the failed one waits for its retry)", seqs(second))
		}
		e.complete(t, e.succeeded(second[0]))
		third := e.claim(t, 16)
		if seqs(third) != "[acme#3]" {
			t.Fatalf("then %s", seqs(third))
		}
		e.complete(t, e.succeeded(third[0]))
		e.clock.Advance(time.Hour)
		if got := seqs(e.claim(t, 16)); got != "[acme#1]" {
			t.Fatalf("once due, the retry (#1, oldest) goes first: %s", got)
		}
	})

	t.Run("MaxInFlightBoundsTheClaim", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 3)
		e.publish(t, "acme", "e", 10)
		if got := seqs(e.claim(t, 16)); got != "[acme#1 acme#2 acme#3]" {
			t.Fatalf("claimed %s, want the 3 oldest", got)
		}
		if got := e.claim(t, 16); len(got) != 0 {
			t.Fatalf("claimed past max_in_flight: %s", seqs(got))
		}
	})

	t.Run("FairnessATenantsBacklogDoesNotDelayAnother", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "zeta", "")
		e.subscribe(t, "acme", "sub_a", 64)
		e.subscribe(t, "zeta", "sub_z", 1)
		if res := e.publish(t, "acme", "a", 10_000); res.Jobs != 10_000 {
			t.Fatalf("acme has %d jobs", res.Jobs)
		}
		e.publish(t, "zeta", "z", 1)
		first := e.claim(t, 16)
		found := false
		for _, c := range first {
			found = found || c.Job.TenantID == "zeta"
		}
		if len(first) != 16 || !found {
			t.Fatalf("first claim round of 16 = %s: zeta's single job must be in it", seqs(first))
		}
	})

	t.Run("ExpiredLeasesAreRecoveredAndStaleCompletionsFenced", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 1)
		e.publish(t, "acme", "e", 1)
		stale := e.claim(t, 1)[0]
		e.clock.Advance(2 * time.Minute) // past the 1 minute lease
		res, err := e.store.RecoverLeases(e.ctx, store.RecoverParams{PoisonThreshold: 5, Limit: 100})
		if err != nil || res.Recovered != 1 || res.Poisoned != 0 {
			t.Fatalf("RecoverLeases = %+v, %v", res, err)
		}
		current := e.claim(t, 1)[0]
		if current.Job.ID != stale.Job.ID || current.LeaseToken == stale.LeaseToken || current.Job.Recoveries != 1 {
			t.Fatalf("re-claim = %+v", current.Job)
		}
		// The worker that lost its lease reports late: fenced out.
		fenced := e.complete(t, e.failed(stale, e.clock.Now().Add(time.Hour)))
		if len(fenced.Fenced) != 1 {
			t.Fatalf("a stale completion was written: %+v", fenced)
		}
		if ok := e.complete(t, e.succeeded(current)); len(ok.Fenced) != 0 {
			t.Fatalf("the current lease was fenced: %+v", ok)
		}
		j, attempts := e.job(t, "acme", current.Job.ID)
		// The recovery counts as an attempt (docs/delivery.md),
		// the success another.
		if j.Status != hub.JobSucceeded || j.Attempts != 2 || j.CompletedAt == nil {
			t.Fatalf("job = %+v", j)
		}
		if len(attempts) != 3 || attempts[0].Error != store.RecoveredAttemptError {
			t.Fatalf("attempts logged = %+v, want the recovered one and both requests that were sent", attempts)
		}
	})

	t.Run("PoisonAfterThresholdRecoveries", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 1)
		e.publish(t, "acme", "e", 1)
		var id string
		for i := 1; i <= 5; i++ {
			c := e.claim(t, 1)
			if len(c) != 1 {
				t.Fatalf("round %d: nothing to claim", i)
			}
			id = c[0].Job.ID
			e.clock.Advance(61 * time.Second) // the worker never reports
			res, err := e.store.RecoverLeases(e.ctx, store.RecoverParams{PoisonThreshold: 5, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			if i < 5 && res.Recovered != 1 || i == 5 && res.Poisoned != 1 {
				t.Fatalf("round %d: %+v", i, res)
			}
		}
		// Poison keeps its history: each recovered attempt is logged and
		// counted (docs/delivery.md).
		j, attempts := e.job(t, "acme", id)
		if j.Status != hub.JobDeadLettered || j.DeadLetterReason != hub.DeadLetterPoison || j.Recoveries != 5 || j.Attempts != 5 {
			t.Fatalf("job = %+v", j)
		}
		if len(attempts) != 5 {
			t.Fatalf("%d attempts logged, want the 5 recovered", len(attempts))
		}
		for _, a := range attempts {
			if a.Error != store.RecoveredAttemptError || a.StatusCode != 0 || a.JobID != id {
				t.Fatalf("recovered attempt = %+v", a)
			}
		}
		if c := e.claim(t, 1); len(c) != 0 {
			t.Fatal("a poison job was claimed again")
		}
	})

	t.Run("ReleaseGivesLeasesBackUnattempted", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 2)
		e.publish(t, "acme", "e", 2)
		c := e.claim(t, 2)
		var leases []store.JobLease
		for _, x := range c {
			leases = append(leases, store.JobLease{JobID: x.Job.ID, LeaseToken: x.LeaseToken})
		}
		if err := e.store.ReleaseJobs(e.ctx, leases); err != nil {
			t.Fatal(err)
		}
		again := e.claim(t, 2)
		if seqs(again) != "[acme#1 acme#2]" || again[0].Job.Recoveries != 0 || again[0].Job.Attempts != 0 {
			t.Fatalf("after release: %+v", again)
		}
	})

	t.Run("DisablingOrDeletingDeadLettersWaitingJobs", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		s1 := e.subscribe(t, "acme", "sub_1", 1)
		e.subscribe(t, "acme", "sub_2", 1)
		e.publish(t, "acme", "e", 3) // 3 jobs each
		inflight := e.claim(t, 16)   // one of each in flight
		s1.Enabled = false
		if _, err := e.store.UpdateSubscription(e.ctx, s1); err != nil {
			t.Fatal(err)
		}
		if err := e.store.DeleteSubscription(e.ctx, "acme", "sub_2"); err != nil {
			t.Fatal(err)
		}
		for _, sub := range []struct{ id, reason string }{{"sub_1", hub.DeadLetterSubscriptionDisabled}, {"sub_2", hub.DeadLetterSubscriptionDeleted}} {
			jobs, err := e.store.ListJobs(e.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: sub.id, Status: hub.JobDeadLettered})
			if err != nil || len(jobs) != 2 || jobs[0].DeadLetterReason != sub.reason {
				t.Fatalf("%s dead letters = %+v, %v", sub.id, jobs, err)
			}
		}
		// The ones in flight fail and come back pending: swept up too.
		for _, c := range inflight {
			e.complete(t, e.failed(c, e.clock.Now()))
		}
		n, err := e.store.DeadLetterOrphans(e.ctx)
		if err != nil || n != 2 {
			t.Fatalf("DeadLetterOrphans = %d, %v", n, err)
		}
		counts, _ := e.store.CountJobs(e.ctx)
		if counts[hub.JobPending] != 0 || counts[hub.JobDeadLettered] != 6 {
			t.Fatalf("counts = %v", counts)
		}
	})

	t.Run("FailureSpanOpensMovesAndClears", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 1)
		e.publish(t, "acme", "e", 3)
		span := func() *hub.FailureSpan {
			s, _ := e.store.GetSubscription(e.ctx, "acme", "sub_1")
			return s.FailureSpan
		}
		t0 := e.clock.Now()
		e.complete(t, e.failed(e.claim(t, 1)[0], t0))
		e.clock.Advance(time.Hour)
		shed := e.claim(t, 1)[0]
		e.complete(t, store.Completion{JobLease: store.JobLease{JobID: shed.Job.ID, LeaseToken: shed.LeaseToken},
			Status: hub.JobPending, NextAttemptAt: e.clock.Now(), SubscriptionID: "sub_1"}) // shed: no attempt
		if s := span(); s == nil || !s.First.Equal(t0) || !s.Last.Equal(t0) {
			t.Fatalf("after one failure and a shed, span = %+v", s)
		}
		e.complete(t, e.failed(e.claim(t, 1)[0], e.clock.Now()))
		if s := span(); s == nil || !s.First.Equal(t0) || !s.Last.Equal(e.clock.Now()) {
			t.Fatalf("after a second failure, span = %+v", s)
		}
		e.complete(t, e.succeeded(e.claim(t, 1)[0]))
		if s := span(); s != nil {
			t.Fatalf("a success left span %+v", s)
		}
	})

	t.Run("AutoDisableWhenSustainedAndSpread", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		s := e.subscribe(t, "acme", "sub_1", 1)
		s.FailureSpan = &hub.FailureSpan{First: e.clock.Now().Add(-121 * time.Hour), Last: e.clock.Now().Add(-2 * time.Hour)}
		if _, err := e.store.UpdateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		e.publish(t, "acme", "e", 3)
		c := e.claim(t, 1)[0]
		res, err := e.store.CompleteJobs(e.ctx, store.CompleteParams{
			Completions: []store.Completion{e.failed(c, e.clock.Now().Add(time.Minute))},
			AutoDisable: &store.AutoDisable{Window: 120 * time.Hour, Spread: 12 * time.Hour},
		})
		if err != nil || len(res.Disabled) != 1 || res.Disabled[0].SubscriptionID != "sub_1" ||
			res.Disabled[0].Reason != "auto-disabled: failing since 2026-11-25T11:00:00Z, last failure 2026-11-30T12:00:00Z" {
			t.Fatalf("CompleteJobs = %+v, %v", res, err)
		}
		got, _ := e.store.GetSubscription(e.ctx, "acme", "sub_1")
		if got.Enabled || got.VerificationState != hub.VerificationActive || got.DisabledAt == nil ||
			got.DisabledReason != "auto-disabled: failing since 2026-11-25T11:00:00Z, last failure 2026-11-30T12:00:00Z" {
			t.Fatalf("subscription = %+v", got)
		}
		dead, _ := e.store.ListJobs(e.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: "sub_1", Status: hub.JobDeadLettered})
		// All three: the two waiting and the one that just failed and
		// was waiting for its retry.
		if len(dead) != 3 || dead[0].DeadLetterReason != hub.DeadLetterSubscriptionDisabled {
			t.Fatalf("dead letters = %+v", dead)
		}
	})

	t.Run("ReplayOneAndBulk", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		e.subscribe(t, "acme", "sub_1", 1)
		e.publish(t, "acme", "e", 3)
		var dead []string
		for range 3 {
			c := e.claim(t, 1)[0]
			e.complete(t, store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken},
				Status: hub.JobDeadLettered, DeadLetterReason: hub.DeadLetterExhausted, SubscriptionID: "sub_1"})
			dead = append(dead, c.Job.ID)
		}
		_, err := e.store.ReplayJob(e.ctx, "globex", dead[0], "admin")
		wantCode(t, err, hub.ENOTFOUND)
		j, err := e.store.ReplayJob(e.ctx, "acme", dead[0], "admin")
		if err != nil || j.ID == dead[0] || j.Status != hub.JobPending || j.EventSequence != 1 || j.Attempts != 0 {
			t.Fatalf("ReplayJob = %+v, %v", j, err)
		}
		e.clock.Advance(time.Minute)
		n, err := e.store.ReplaySubscription(e.ctx, store.ReplayParams{TenantID: "acme", SubscriptionID: "sub_1",
			Status: hub.JobDeadLettered, Since: e.clock.Now().Add(-time.Hour)})
		if err != nil || n != (store.ReplayResult{Replayed: 2, Matched: 3, AlreadyReplayed: 1}) {
			t.Fatalf("ReplaySubscription = %+v, %v; want the 2 not replayed one by one", n, err)
		}
		n, _ = e.store.ReplaySubscription(e.ctx, store.ReplayParams{TenantID: "acme", SubscriptionID: "sub_1",
			Status: hub.JobDeadLettered, Since: e.clock.Now().Add(-time.Hour)})
		if n != (store.ReplayResult{Matched: 3, AlreadyReplayed: 3}) {
			t.Fatalf("a second bulk replay: %+v, want none replayed again", n)
		}
		n, _ = e.store.ReplaySubscription(e.ctx, store.ReplayParams{TenantID: "globex", SubscriptionID: "sub_1",
			Status: hub.JobDeadLettered, Since: time.Time{}})
		if n != (store.ReplayResult{}) {
			t.Fatal("another tenant replayed acme's jobs")
		}
		if got := seqs(e.claim(t, 16)); got != "[acme#1]" {
			t.Fatalf("replays are claimed in order, one at a time: %s", got)
		}
		s, _ := e.store.GetSubscription(e.ctx, "acme", "sub_1")
		s.Enabled = false
		e.store.UpdateSubscription(e.ctx, s)
		_, err = e.store.ReplayJob(e.ctx, "acme", dead[1], "admin")
		wantCode(t, err, hub.ECONFLICT)
	})

	t.Run("ListGetAndPrune", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 5)
		e.publish(t, "acme", "e", 5)
		cs := e.claim(t, 5)
		sort.Slice(cs, func(i, j int) bool { return cs[i].Job.EventSequence < cs[j].Job.EventSequence })
		e.complete(t, e.succeeded(cs[0]), e.failed(cs[1], e.clock.Now()),
			store.Completion{JobLease: store.JobLease{JobID: cs[2].Job.ID, LeaseToken: cs[2].LeaseToken}, Status: hub.JobDeadLettered,
				DeadLetterReason: hub.DeadLetterExhausted, LastError: "destination answered 500", SubscriptionID: "sub_1",
				Attempt: &hub.Attempt{ID: "att_x", StartedAt: e.clock.Now(), StatusCode: 500, Error: "destination answered 500", ResponseBody: "nope"}})
		all, _ := e.store.ListJobs(e.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: "sub_1", Limit: 2})
		rest, _ := e.store.ListJobs(e.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: "sub_1", Before: all[1].ID})
		if len(all) != 2 || len(rest) != 3 || all[0].ID < all[1].ID || rest[0].ID > all[1].ID {
			t.Fatalf("pages: %d then %d, newest first", len(all), len(rest))
		}
		dead, _ := e.store.ListJobs(e.ctx, store.ListJobsParams{TenantID: "acme", SubscriptionID: "sub_1", Status: hub.JobDeadLettered})
		if len(dead) != 1 || dead[0].ID != cs[2].Job.ID {
			t.Fatalf("dead letters = %+v", dead)
		}
		j, attempts := e.job(t, "acme", cs[2].Job.ID)
		if j.Attempts != 1 || j.LastError != "destination answered 500" || len(attempts) != 1 || attempts[0].ResponseBody != "nope" || attempts[0].StatusCode != 500 {
			t.Fatalf("job %+v attempts %+v", j, attempts)
		}
		if _, _, err := e.store.GetJob(e.ctx, "globex", j.ID); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("another tenant's job: %v", err)
		}
		e.clock.Advance(169 * time.Hour)
		r, err := e.store.Prune(e.ctx, store.PruneParams{DeadLettersBefore: e.clock.Now().Add(-168 * time.Hour), Batch: 100})
		if err != nil || r != (store.PruneResult{DeadLetters: 1}) {
			t.Fatalf("Prune = %+v, %v", r, err)
		}
		if _, _, err := e.store.GetJob(e.ctx, "acme", j.ID); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatal("a pruned dead letter is still there")
		}
	})

	t.Run("TenantsOfFindsAResourcesTenantByItsID", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		e.subscribe(t, "acme", "sub_1", 5)
		e.subscribe(t, "globex", "sub_2", 5)
		e.publish(t, "acme", "e", 1)
		e.publish(t, "globex", "e", 1) // the same ce-id at both tenants
		e.publish(t, "globex", "g", 1)
		jobs, err := e.store.ListJobs(e.ctx, store.ListJobsParams{TenantID: "globex", SubscriptionID: "sub_2"})
		if err != nil || len(jobs) != 2 {
			t.Fatalf("globex's jobs: %d, %v", len(jobs), err)
		}
		for _, c := range []struct {
			kind store.ResourceKind
			id   string
			want []string
		}{
			{store.ResourceDelivery, jobs[0].ID, []string{"globex"}},
			{store.ResourceDelivery, "dlv_nothing", []string{}},
			{store.ResourceSubscription, "sub_1", []string{"acme"}},
			{store.ResourceSubscription, "sub_2", []string{"globex"}},
			{store.ResourceEvent, "e-00000", []string{"acme", "globex"}},
			{store.ResourceEvent, "g-00000", []string{"globex"}},
			{store.ResourceEvent, "nothing", []string{}},
		} {
			got, err := e.store.TenantsOf(e.ctx, c.kind, c.id)
			if err != nil || !slices.Equal(got, c.want) || got == nil {
				t.Errorf("TenantsOf(%s, %s) = %#v, %v; want %v", c.kind, c.id, got, err, c.want)
			}
		}
		if err := e.store.DeleteSubscription(e.ctx, "acme", "sub_1"); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.store.TenantsOf(e.ctx, store.ResourceSubscription, "sub_1"); len(got) != 0 {
			t.Fatalf("a deleted subscription's tenant: %v", got)
		}
	})

	t.Run("CompletionClaimsTheNextJobsOfWhatItFreed", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		e.subscribe(t, "acme", "sub_a", 1)
		e.subscribe(t, "globex", "sub_g", 1)
		e.publish(t, "acme", "a", 3)
		first := e.claim(t, 1)
		if seqs(first) != "[acme#1]" {
			t.Fatalf("first = %s", seqs(first))
		}
		e.publish(t, "globex", "g", 2) // waiting, but not freed by this completion
		res, err := e.store.CompleteJobs(e.ctx, store.CompleteParams{
			Completions: []store.Completion{e.succeeded(first[0])},
			Next:        &store.ClaimParams{Batch: 16, Lease: time.Minute},
		})
		if err != nil {
			t.Fatal(err)
		}
		if seqs(res.Claimed) != "[acme#2]" || res.Claimed[0].Event.ID != "a-00001" || res.Claimed[0].Subscription.ID != "sub_a" {
			t.Fatalf("claimed next %s, want only acme's next job", seqs(res.Claimed))
		}
		// The hand-off kept max_in_flight: nothing more of acme's.
		if got := seqs(e.claim(t, 16)); got != "[globex#1]" {
			t.Fatalf("a claim after the hand-off = %s, want only globex's", got)
		}
		j, _ := e.job(t, "acme", first[0].Job.ID)
		if j.Status != hub.JobSucceeded {
			t.Fatalf("the completed job = %+v", j)
		}
	})

	t.Run("ConcurrentClaimersNeverShareAJob", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		const tenants, perTenant = 10, 100
		for i := range tenants {
			id := fmt.Sprintf("t%d", i)
			e.tenant(t, id, "")
			e.subscribe(t, id, "sub_"+id, 4)
			e.publish(t, id, "e", perTenant)
		}
		var mu sync.Mutex
		seen := make(map[string]int)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for idle := 0; idle < 3; {
					c, err := e.store.ClaimJobs(e.ctx, store.ClaimParams{Batch: 16, Lease: time.Minute})
					if err != nil {
						errs <- err
						return
					}
					if len(c) == 0 {
						idle++
						continue
					}
					idle = 0
					var done []store.Completion
					mu.Lock()
					for _, x := range c {
						seen[x.Job.ID]++
						done = append(done, e.succeeded(x))
					}
					mu.Unlock()
					if _, err := e.store.CompleteJobs(e.ctx, store.CompleteParams{Completions: done}); err != nil {
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
		if len(seen) != tenants*perTenant {
			t.Fatalf("%d jobs claimed, want %d", len(seen), tenants*perTenant)
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("job %s claimed %d times", id, n)
			}
		}
	})
}
