package postgres_test

import (
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// STREAMING_HUB_POSTGRES_MAX_IDLE_CONNS is pgxpool's MinConns (the pool
// keeps that many connections open, at most its size) and
// POSTGRES_CONN_MAX_LIFETIME its MaxConnLifetime.
func TestOpen_KeepsConnectionsOpenAndBoundsTheirLifetime(t *testing.T) {
	db := testkit.OpenPostgres(t, store.Options{Pool: store.PoolOptions{MinConns: 2, MaxConnLifetime: 30 * time.Minute}})
	cfg := db.Pool().Config()
	if cfg.MinConns != 2 || cfg.MaxConnLifetime != 30*time.Minute {
		t.Fatalf("MinConns %d, MaxConnLifetime %s", cfg.MinConns, cfg.MaxConnLifetime)
	}
	// More than the pool holds: the pool's size.
	db = testkit.OpenPostgres(t, store.Options{Pool: store.PoolOptions{MinConns: 100}})
	if cfg := db.Pool().Config(); cfg.MinConns != cfg.MaxConns {
		t.Fatalf("MinConns %d above MaxConns %d", cfg.MinConns, cfg.MaxConns)
	}
}
