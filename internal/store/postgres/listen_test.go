package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// twoProcesses opens two stores on one schema, as two replicas would.
func twoProcesses(t *testing.T) (a, b *postgres.DB) {
	t.Helper()
	url := testkit.PostgresPoolURL(t)
	ctx := context.Background()
	for _, db := range []**postgres.DB{&a, &b} {
		var err error
		if *db, err = postgres.Open(ctx, url, store.Options{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { (*db).Close() })
	}
	if err := a.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// waitFor polls cond until it holds (testkit.Patience at most).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(testkit.Patience); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// Jobs another process creates, gives back or wakes are announced by
// NOTIFY to a listening process, naming their subscriptions; after the listening connection is
// killed it is dialed again, says any subscription may have jobs (what
// was announced meanwhile was missed), and hears again.
func TestListenJobs_AnotherProcessesJobsAndAKilledConnection(t *testing.T) {
	a, b := twoProcesses(t)
	ctx := context.Background()
	if _, err := a.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "Acme"}); err != nil {
		t.Fatal(err)
	}
	s := storetest.NewSubscription("acme", "sub_1")
	s.VerificationState, s.MaxInFlight = hub.VerificationActive, 1
	sub, err := a.CreateSubscription(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	heard := make(chan []string, 100)
	lost := make(chan error, 10)
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- b.ListenJobs(lctx, store.ListenParams{OnJobs: func(subs []string) { heard <- subs }, OnLost: func(err error) { lost <- err }})
	}()
	expect := func(want []string) {
		t.Helper()
		select {
		case got := <-heard:
			if !slices.Equal(got, want) {
				t.Fatalf("heard %v, want %v", got, want)
			}
		case <-time.After(testkit.Patience):
			t.Fatalf("heard nothing, want %v", want)
		}
	}
	waitFor(t, "b to listen", func() bool { return b.ListenerPID() != 0 })
	expect(nil) // what was announced before it listened
	// The other process's own listeners, had it any, are told in process:
	// its notification is for the others.
	ingest := func(id string) {
		t.Helper()
		if res, err := a.Ingest(ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", id)}}); err != nil || res.Jobs != 1 {
			t.Fatalf("ingest %s: %+v, %v", id, res, err)
		}
	}
	ingest("e-1")
	expect([]string{sub.ID})

	// Jobs given back (a stopping process's) and jobs woken (a destination
	// found healthy again) are due at once: they are announced too.
	claim := func() store.Claimed {
		t.Helper()
		claimed, err := a.ClaimJobs(ctx, store.ClaimParams{Batch: 1, Lease: time.Minute})
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claim: %+v, %v", claimed, err)
		}
		return claimed[0]
	}
	c := claim()
	if err := a.ReleaseJobs(ctx, []store.JobLease{{JobID: c.Job.ID, LeaseToken: c.LeaseToken}}); err != nil {
		t.Fatal(err)
	}
	expect([]string{sub.ID})
	c = claim()
	if _, err := a.CompleteJobs(ctx, store.CompleteParams{Completions: []store.Completion{{
		JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, SubscriptionID: sub.ID,
		Status: hub.JobPending, NextAttemptAt: time.Now().Add(time.Hour), LastError: "destination answered 500",
	}}}); err != nil {
		t.Fatal(err)
	}
	if n, err := a.WakeJobs(ctx, []string{sub.ID}); err != nil || n != 1 {
		t.Fatalf("woke %d, %v", n, err)
	}
	expect([]string{sub.ID})

	old := b.ListenerPID()
	var killed bool
	if err := a.Pool().QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int32(old)).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate the listener: %v, %v", killed, err)
	}
	select {
	case <-lost:
	case <-time.After(testkit.Patience):
		t.Fatal("the lost connection was not reported")
	}
	waitFor(t, "b to listen again", func() bool { return b.ListenerPID() != 0 && b.ListenerPID() != old })
	expect(nil) // what was announced while it was away
	ingest("e-2")
	expect([]string{sub.ID})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testkit.Patience):
		t.Fatal("ListenJobs did not return when its context ended")
	}
}
