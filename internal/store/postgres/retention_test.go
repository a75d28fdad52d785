package postgres_test

import (
	"context"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/postgres"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// Two handles on one schema are two processes as far as PostgreSQL is
// concerned: the advisory lock lets one run at a time, in the schema only,
// and a holder whose session dies releases it.
func TestExclusiveAcrossProcessesAndAfterAHolderDies(t *testing.T) {
	testkit.Long(t)
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
