package storetest

import (
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (e env) write(t testing.TB, p store.WriteParams) store.WriteResult {
	t.Helper()
	res, err := e.store.Write(e.ctx, p)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	return res
}

// testWriter: one batch of a process's writer carries records of several
// partitions, results, the hand-off and gathered statistics in one
// transaction (docs/architecture.md, "The writer").
func testWriter(t *testing.T, open Opener) {
	t.Run("ABatchCarriesRecordsResultsAndTheHandOffTogether", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		e.subscribe(t, "acme", "sub_a", 1)
		e.subscribe(t, "globex", "sub_g", 4)
		e.publish(t, "acme", "old", 2)
		c := e.claimWith(t, store.ClaimParams{Batch: 16, Owner: "proc"})
		if len(c) != 1 {
			t.Fatalf("claimed %s; want acme's first job (ordered)", ids(c))
		}
		// Records of two partitions (two tenants), acme's result and its
		// hand-off, in one Write.
		a, g := NewEvent("acme", "new"), NewEvent("globex", "g-1")
		a.Partition, g.Partition = 0, 3
		res := e.write(t, store.WriteParams{
			Ingest: store.IngestParams{Events: []hub.Event{a, g}},
			Offer:  &store.BirthOffer{Owner: "proc", Token: "lease_born", Lease: time.Minute, Room: 10, Exclude: []string{}},
			Complete: store.CompleteParams{Completions: []store.Completion{e.succeeded(c[0])},
				Next: &store.ClaimParams{Batch: 16, Lease: time.Minute, Run: 8, Owner: "proc"}},
		})
		if len(res.Ingest.Outcomes) != 2 || res.Ingest.Outcomes[0].Verdict != hub.Accept || res.Ingest.Outcomes[1].Verdict != hub.Accept {
			t.Fatalf("outcomes %+v; want both accepted", res.Ingest.Outcomes)
		}
		if res.Ingest.Outcomes[0].Sequence != 3 || res.Ingest.Outcomes[1].Sequence != 1 {
			t.Errorf("sequences %d, %d; want acme's 3rd and globex's 1st", res.Ingest.Outcomes[0].Sequence, res.Ingest.Outcomes[1].Sequence)
		}
		if len(res.Complete.Fenced) != 0 {
			t.Fatalf("fenced %v", res.Complete.Fenced)
		}
		if j, as := e.job(t, "acme", c[0].Job.ID); j.Status != hub.JobSucceeded || len(as) != 1 {
			t.Errorf("the result was not written: %s, %d attempts", j.Status, len(as))
		}
		// globex's new job was born leased; acme's new job could not be
		// (an older one was pending), and the hand-off took acme's jobs in
		// order: the old second one, then the new one.
		if len(res.Born) != 1 || res.Born[0].Job.SubscriptionID != "sub_g" || res.Born[0].Event.ID != "g-1" {
			t.Fatalf("born %s; want globex's one job", ids(res.Born))
		}
		if got := ids(res.Complete.Claimed); got != "[sub_a#2 sub_a#3]" {
			t.Fatalf("hand-off claimed %s; want acme's run [sub_a#2 sub_a#3]", got)
		}
		if c := e.claim(t, 16); len(c) != 0 {
			t.Fatalf("claimed %s: nothing should be left", ids(c))
		}
	})

	t.Run("DeferredStatsAreWrittenOnlyWhenGathered", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		sub := e.subscribe(t, "acme", "sub_a", 4)
		p := store.WriteParams{Ingest: store.IngestParams{Events: []hub.Event{NewEvent("acme", "e-1")}}, DeferStats: true}
		res := e.write(t, p)
		if seen, err := e.store.ListTypesSeen(e.ctx, "acme"); err != nil || len(seen) != 0 {
			t.Fatalf("types seen %+v, %v; want none before the gathered statistics are written", seen, err)
		}
		c := e.claim(t, 16)
		done := store.WriteParams{Complete: store.CompleteParams{Completions: []store.Completion{e.succeeded(c[0])}}, DeferStats: true}
		e.write(t, done)
		if rs, err := e.store.ListRollups(e.ctx, sub.ID, time.Time{}); err != nil || len(rs) != 0 {
			t.Fatalf("rollups %+v, %v; want none before the gathered statistics are written", rs, err)
		}
		var g store.Gathered
		g.Add(store.StatsOf(p, res, e.clock.Now()))
		g.Add(store.StatsOf(done, store.WriteResult{}, e.clock.Now()))
		e.clock.Advance(time.Second)
		e.write(t, store.WriteParams{Stats: g.Take()})
		seen, err := e.store.ListTypesSeen(e.ctx, "acme")
		if err != nil || len(seen) != 1 || seen[0].EventType != "transaction.posted" {
			t.Fatalf("types seen %+v, %v; want transaction.posted", seen, err)
		}
		rs, err := e.store.ListRollups(e.ctx, sub.ID, time.Time{})
		if err != nil || len(rs) != 1 || rs[0].Successes != 1 {
			t.Fatalf("rollups %+v, %v; want one success", rs, err)
		}
		if g.Len() != 0 {
			t.Errorf("gathered %d after Take", g.Len())
		}
	})

	t.Run("AResultsOnlyBatchIsWrittenAndAnEmptyOneIsNothing", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_a", 4)
		e.publish(t, "acme", "e", 1)
		if res := e.write(t, store.WriteParams{}); len(res.Born)+len(res.Ingest.Outcomes) != 0 {
			t.Fatalf("an empty batch did something: %+v", res)
		}
		c := e.claim(t, 16)
		e.write(t, store.WriteParams{Complete: store.CompleteParams{Completions: []store.Completion{e.failed(c[0], e.clock.Now())}}})
		if j, as := e.job(t, "acme", c[0].Job.ID); j.Status != hub.JobPending || j.Attempts != 1 || len(as) != 1 {
			t.Fatalf("job %s with %d attempts (%d logged); want pending after one failed attempt", j.Status, j.Attempts, len(as))
		}
	})
}

// testHeartbeats: a process's jobs are its own while its heartbeat is
// fresh; when it lapses another process takes them all over at once
// (docs/delivery.md, "Crashes").
func testHeartbeats(t *testing.T, open Opener) {
	const lease = 5 * time.Second
	beat := func(t testing.TB, e env, id string, register bool) bool {
		t.Helper()
		alive, err := e.store.Heartbeat(e.ctx, id, register)
		if err != nil {
			t.Fatalf("Heartbeat(%s): %v", id, err)
		}
		return alive
	}
	recoverAt := func(t testing.TB, e env) store.RecoverResult {
		t.Helper()
		res, err := e.store.RecoverLeases(e.ctx, store.RecoverParams{PoisonThreshold: 5, Limit: 100, Lease: lease})
		if err != nil {
			t.Fatalf("RecoverLeases: %v", err)
		}
		return res
	}

	t.Run("ALapsedProcessLosesAllItsJobsAtOnceAFreshOneNone", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_a", 8)
		e.subscribe(t, "acme", "sub_b", 8)
		e.publish(t, "acme", "e", 3) // 6 jobs
		beat(t, e, "proc_dead", true)
		beat(t, e, "proc_live", true)
		// Leases of an hour: only the heartbeat can free them early.
		dead := e.claimWith(t, store.ClaimParams{Batch: 3, Lease: time.Hour, Owner: "proc_dead"})
		live := e.claimWith(t, store.ClaimParams{Batch: 3, Lease: time.Hour, Owner: "proc_live"})
		if len(dead) != 3 || len(live) != 3 {
			t.Fatalf("claimed %d and %d", len(dead), len(live))
		}
		e.clock.Advance(4 * time.Second)
		beat(t, e, "proc_live", false)
		if res := recoverAt(t, e); res != (store.RecoverResult{}) {
			t.Fatalf("recovered %+v within the heartbeat", res)
		}
		e.clock.Advance(2 * time.Second) // proc_dead's beat is 6 s old, proc_live's 2 s
		res := recoverAt(t, e)
		if res.Recovered != 3 || res.Processes != 1 {
			t.Fatalf("recovered %+v; want proc_dead's 3 jobs, one process", res)
		}
		for _, c := range dead {
			j, as := e.job(t, "acme", c.Job.ID)
			if j.Status != hub.JobPending || j.Attempts != 1 || len(as) != 1 || as[0].Error != store.RecoveredAttemptError {
				t.Errorf("recovered job %s: %s, %d attempts, log %+v; want pending with the recovered attempt", c.Job.ID, j.Status, j.Attempts, as)
			}
		}
		for _, c := range live {
			if j, _ := e.job(t, "acme", c.Job.ID); j.Status != hub.JobInFlight {
				t.Errorf("a live process's job %s is %s", c.Job.ID, j.Status)
			}
		}
		// The dead process's results are fenced; it learns its row is gone.
		if r := e.complete(t, e.succeeded(dead[0])); len(r.Fenced) != 1 {
			t.Errorf("a late result of a taken-over job was written: %+v", r)
		}
		if beat(t, e, "proc_dead", false) {
			t.Error("a process whose jobs were taken over was told it is alive")
		}
		if !beat(t, e, "proc_live", false) {
			t.Error("a live process was told it lapsed")
		}
	})

	t.Run("ALapsedProcessNotYetTakenOverKeepsItsJobs", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_a", 8)
		e.publish(t, "acme", "e", 2)
		beat(t, e, "proc", true)
		c := e.claimWith(t, store.ClaimParams{Batch: 8, Lease: time.Hour, Owner: "proc"})
		e.clock.Advance(time.Minute) // an outage: nobody recovered meanwhile
		if !beat(t, e, "proc", false) {
			t.Fatal("a lapsed row not yet taken over was not renewed")
		}
		if res := recoverAt(t, e); res != (store.RecoverResult{}) {
			t.Fatalf("recovered %+v after the process renewed", res)
		}
		if r := e.complete(t, e.succeeded(c[0]), e.succeeded(c[1])); len(r.Fenced) != 0 {
			t.Fatalf("fenced %v: its answered jobs are still its own", r.Fenced)
		}
	})

	t.Run("JobsOfNoProcessEndWithTheirOwnLease", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_a", 8)
		e.publish(t, "acme", "e", 2)
		e.claimWith(t, store.ClaimParams{Batch: 1, Lease: 30 * time.Second})                  // no process
		e.claimWith(t, store.ClaimParams{Batch: 1, Lease: 30 * time.Second, Owner: "nobody"}) // no heartbeat row
		e.clock.Advance(10 * time.Second)
		if res := recoverAt(t, e); res.Recovered != 0 {
			t.Fatalf("recovered %+v before the leases ended", res)
		}
		e.clock.Advance(21 * time.Second)
		if res := recoverAt(t, e); res.Recovered != 2 {
			t.Fatalf("recovered %+v; want both, by their own lease", res)
		}
	})

	t.Run("ReclaimFindsWhatAClaimOrABirthWhoseAnswerWasLostTook", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_o", 1)
		e.subscribe(t, "acme", "sub_u", 8)
		e.publish(t, "acme", "e", 2)
		c := e.claimWith(t, store.ClaimParams{Batch: 8, Run: 8, Owner: "proc", Token: "lease_lost_answer"})
		if len(c) != 4 {
			t.Fatalf("claimed %s", ids(c))
		}
		got, err := e.store.Reclaim(e.ctx, "lease_lost_answer")
		if err != nil || ids(got) != ids(c) || got[0].Event.ID == "" || got[0].Subscription.ID == "" || got[0].LeaseToken != "lease_lost_answer" {
			t.Fatalf("Reclaim = %s, %v; want the claimed jobs, whole, in arrival order", ids(got), err)
		}
		e.complete(t, e.succeeded(c[0]))
		if got, _ := e.store.Reclaim(e.ctx, "lease_lost_answer"); len(got) != 3 {
			t.Fatalf("Reclaim after a result = %s; want the 3 still in flight", ids(got))
		}
		if got, _ := e.store.Reclaim(e.ctx, "lease_never_used"); len(got) != 0 {
			t.Fatalf("an unknown token reclaimed %s", ids(got))
		}
		res := e.write(t, store.WriteParams{Ingest: store.IngestParams{Events: []hub.Event{NewEvent("acme", "born")}},
			Offer: &store.BirthOffer{Owner: "proc", Token: "lease_born_lost", Lease: time.Minute, Room: 10, Exclude: []string{}}})
		got, err = e.store.Reclaim(e.ctx, "lease_born_lost")
		if err != nil || ids(got) != ids(res.Born) || len(got) == 0 {
			t.Fatalf("Reclaim of a birth = %s, %v; want %s", ids(got), err, ids(res.Born))
		}
	})

	t.Run("LeasedToListsAProcesssJobsLeasedBeforeAnInstant", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_a", 8)
		e.publish(t, "acme", "e", 3)
		beat(t, e, "proc", true)
		old := e.claimWith(t, store.ClaimParams{Batch: 2, Lease: time.Hour, Owner: "proc"})
		e.clock.Advance(time.Minute)
		e.claimWith(t, store.ClaimParams{Batch: 1, Lease: time.Hour, Owner: "proc"})
		got, err := e.store.LeasedTo(e.ctx, "proc", e.clock.Now().Add(-time.Second))
		if err != nil || len(got) != 2 {
			t.Fatalf("LeasedTo = %+v, %v; want the 2 jobs leased a minute ago", got, err)
		}
		for _, j := range got {
			if j.JobLease != leaseOf(old[0]) && j.JobLease != leaseOf(old[1]) {
				t.Errorf("LeasedTo listed %+v", j)
			}
		}
		if err := e.store.Deregister(e.ctx, "proc"); err != nil {
			t.Fatal(err)
		}
		if beat(t, e, "proc", false) {
			t.Error("a deregistered process renewed")
		}
	})
}
