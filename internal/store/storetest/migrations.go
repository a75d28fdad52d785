package storetest

import (
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

func testMigrations(t *testing.T, open Opener) {
	e := setup(t, open, store.Options{})
	if err := e.store.CheckSchema(e.ctx); err != nil {
		t.Fatalf("CheckSchema after open: %v", err)
	}
	if err := e.store.Migrate(e.ctx); err != nil {
		t.Fatalf("second Migrate is not a no-op: %v", err)
	}
	if err := e.store.CheckSchema(e.ctx); err != nil {
		t.Fatalf("CheckSchema after second Migrate: %v", err)
	}
	if err := e.store.Ping(e.ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}
