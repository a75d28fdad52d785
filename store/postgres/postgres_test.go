package postgres_test

import (
	"context"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
	"github.com/lerianstudio/streaming-hub/store"
	"github.com/lerianstudio/streaming-hub/store/postgres"
	"github.com/lerianstudio/streaming-hub/store/storetest"
)

func open(t testing.TB, opts store.Options) store.Store {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, testkit.PostgresURL(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestConformance(t *testing.T) { storetest.Run(t, open) }
