package postgres_test

import (
	"context"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// Two handles on one schema are two processes as far as PostgreSQL is
// concerned: the advisory lock lets one run at a time, in the schema only,
// and a holder whose session dies releases it.
func TestExclusiveAcrossProcessesAndAfterAHolderDies(t *testing.T) {
	ctx := context.Background()
	url := testkit.PostgresPoolURL(t)
	open := func() *postgres.DB {
		db, err := postgres.Open(ctx, url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return db
	}
	a, b := open(), open()
	other := testkit.OpenPostgres(t, store.Options{}) // another schema

	holding, release := make(chan int32), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := a.Exclusive(ctx, "prune", func(ctx context.Context) error {
			var pid int32
			// The lock's session is the one whose pid holds it.
			if err := a.Pool().QueryRow(ctx, `SELECT l.pid FROM pg_locks l,
				(SELECT hashtextextended(current_schema() || '/streaming-hub/prune', 0) AS k) key
				WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
				AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
				AND l.classid::bigint = (key.k >> 32) & 4294967295 AND l.objid::bigint = key.k & 4294967295`).Scan(&pid); err != nil {
				return err
			}
			holding <- pid
			<-release
			return nil
		})
		done <- err
	}()
	pid := <-holding
	ran, err := b.Exclusive(ctx, "prune", func(context.Context) error { return nil })
	if ran || err != nil {
		t.Fatalf("a second process ran while the first held the lock: %v, %v", ran, err)
	}
	if ran, err := other.Exclusive(ctx, "prune", func(context.Context) error { return nil }); !ran || err != nil {
		t.Fatalf("another schema was locked out: %v, %v", ran, err)
	}

	// The holder's session dies (a crashed process): the lock goes with it.
	if _, err := b.Pool().Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "the lock to be free after its session died", func() bool {
		ran, err := b.Exclusive(ctx, "prune", func(context.Context) error { return nil })
		return ran && err == nil
	})
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ran, err := a.Exclusive(ctx, "prune", func(context.Context) error { return nil }); !ran || err != nil {
		t.Fatalf("the first process after its session was cut: %v, %v", ran, err)
	}
}

// A pruned job's attempt log goes with it; nothing else's does.
func TestPruneDeletesTheAttemptsOfPrunedJobs(t *testing.T) {
	ctx := context.Background()
	clock := testkit.NewClock()
	db := testkit.OpenPostgres(t, store.Options{Now: clock.Now})
	db.CreateTenant(ctx, store.CreateTenantParams{ID: "acme", Name: "acme"})
	s := storetest.NewSubscription("acme", "sub_1")
	s.VerificationState, s.MaxInFlight = hub.VerificationActive, 2
	if _, err := db.CreateSubscription(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ingest(ctx, store.IngestParams{Events: []hub.Event{storetest.NewEvent("acme", "1"), storetest.NewEvent("acme", "2")}}); err != nil {
		t.Fatal(err)
	}
	cs, err := db.ClaimJobs(ctx, store.ClaimParams{Batch: 2, Lease: time.Minute})
	if err != nil || len(cs) != 2 {
		t.Fatalf("claim: %v, %v", cs, err)
	}
	var done []store.Completion
	for i, c := range cs {
		status := hub.JobSucceeded
		if i == 1 {
			status = hub.JobPending
		}
		done = append(done, store.Completion{JobLease: store.JobLease{JobID: c.Job.ID, LeaseToken: c.LeaseToken}, Status: status,
			NextAttemptAt: clock.Now().Add(time.Hour), SubscriptionID: "sub_1",
			Attempt: &hub.Attempt{ID: hub.NewID("att", clock.Now()), StartedAt: clock.Now(), StatusCode: 200}})
	}
	if _, err := db.CompleteJobs(ctx, store.CompleteParams{Completions: done}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	if r, err := db.Prune(ctx, store.PruneParams{SucceededBefore: clock.Now()}); err != nil || r.SucceededJobs != 1 {
		t.Fatalf("Prune = %+v, %v", r, err)
	}
	var jobs, attempts int
	db.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM delivery_jobs), (SELECT count(*) FROM delivery_attempts)`).Scan(&jobs, &attempts)
	if jobs != 1 || attempts != 1 {
		t.Fatalf("left %d jobs and %d attempts, want the pending job and its one attempt", jobs, attempts)
	}
}
