package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, as the store uses it

	hub "github.com/lerianstudio/streaming-hub"
)

// seedDeliveries writes n finished deliveries of one subscription straight
// into the dev hub's SQLite file, in one transaction, one a second up to
// now: the pages are timed with 10,000 deliveries stored (docs/console.md)
// without making 10,000 real deliveries. They are succeeded, so dispatch
// never claims them; their events are not stored (their event links are
// the 404 page, as an event past retention is).
func seedDeliveries(ctx context.Context, dbPath, tenant, subscription string, n int, now time.Time) error {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	db, err := sql.Open("sqlite", "file:"+dbPath+"?"+q.Encode())
	if err != nil {
		return err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO delivery_jobs (id, tenant_id, subscription_id, event_sequence, event_id, status,
		attempts, next_attempt_at, enqueued_at, created_at, updated_at, completed_at)
		VALUES (?, ?, ?, ?, ?, 'succeeded', 1, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i := range n {
		at := now.Add(-time.Duration(n-i) * time.Second)
		// The id of a job created at, with i as its tail: unique, and in
		// the creation order the store's indexes expect of ids.
		id := hub.IDPrefixAt("dlv", at)
		id = id[:len(id)-8] + fmt.Sprintf("%08x", i)
		us := at.UnixMicro()
		if _, err := stmt.ExecContext(ctx, id, tenant, subscription, 1_000_000+i, fmt.Sprintf("seeded-%05d", i), us, us, us, us, us+40_000); err != nil {
			return fmt.Errorf("seed delivery %d: %w", i, err)
		}
	}
	return tx.Commit()
}
