package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

const backfillColumns = `subscription_id, tenant_id, since, state, until_sequence, cursor_sequence,
	matched, queued, skipped, started_at, finished_at, created_at`

func scanBackfill(row scanner) (hub.Backfill, error) {
	var b hub.Backfill
	var since, created int64
	var started, finished *int64
	err := row.Scan(&b.SubscriptionID, &b.TenantID, &since, &b.State, &b.UntilSequence, &b.Sequence,
		&b.Matched, &b.Queued, &b.Skipped, &started, &finished, &created)
	b.Since, b.CreatedAt = fromMicros(since), fromMicros(created)
	if started != nil {
		t := fromMicros(*started)
		b.StartedAt = &t
	}
	if finished != nil {
		t := fromMicros(*finished)
		b.FinishedAt = &t
	}
	return b, err
}

func (db *DB) StartBackfill(ctx context.Context, tenantID, subscriptionID string, since time.Time) (_ hub.Backfill, err error) {
	defer wrap(&err, "StartBackfill")
	now := micros(db.opts.Stamp())
	var out hub.Backfill
	err = db.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE subscriptions SET backfill_hold = 0
			WHERE id = ? AND tenant_id = ? AND deleted_at IS NULL`, subscriptionID, tenantID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err != nil {
				return err
			}
			return store.SubscriptionNotFound(subscriptionID)
		}
		out, err = scanBackfill(tx.QueryRowContext(ctx, `INSERT INTO subscription_backfills (subscription_id, tenant_id,
				since, state, created_at, updated_at) VALUES (?1, ?2, ?3, 'running', ?4, ?4)
			ON CONFLICT (subscription_id) DO UPDATE SET since = ?3, state = 'running', until_sequence = 0,
				cursor_sequence = 0, matched = 0, queued = 0, skipped = 0, started_at = NULL, finished_at = NULL,
				created_at = ?4, updated_at = ?4
			RETURNING `+backfillColumns, subscriptionID, tenantID, micros(since), now))
		return err
	})
	return out, err
}

func (db *DB) Backfills(ctx context.Context, tenantID string, subscriptionIDs []string) (_ map[string]hub.Backfill, err error) {
	defer wrap(&err, "Backfills")
	out := make(map[string]hub.Backfill)
	if len(subscriptionIDs) == 0 {
		return out, nil
	}
	rows, err := db.r.QueryContext(ctx, `SELECT `+backfillColumns+` FROM subscription_backfills
		WHERE tenant_id = ? AND subscription_id IN (`+placeholders(len(subscriptionIDs))+`)`,
		append([]any{tenantID}, anys(subscriptionIDs)...)...)
	if err != nil {
		return nil, err
	}
	bs, err := collect(rows, scanBackfill)
	for _, b := range bs {
		out[b.SubscriptionID] = b
	}
	return out, err
}

func (db *DB) AdvanceBackfills(ctx context.Context, p store.AdvanceBackfillsParams) (_ store.AdvanceBackfillsResult, err error) {
	defer wrap(&err, "AdvanceBackfills")
	p = p.WithDefaults()
	rows, err := db.r.QueryContext(ctx, `SELECT b.subscription_id FROM subscription_backfills b
		JOIN subscriptions s ON s.id = b.subscription_id
		WHERE b.state = 'running' AND s.enabled = 1 AND s.verification_state = 'active' AND s.deleted_at IS NULL
		ORDER BY b.updated_at, b.subscription_id LIMIT ?`, p.Limit)
	if err != nil {
		return store.AdvanceBackfillsResult{}, err
	}
	ids, err := collect(rows, func(r scanner) (string, error) {
		var id string
		return id, r.Scan(&id)
	})
	if err != nil {
		return store.AdvanceBackfillsResult{}, err
	}
	var res store.AdvanceBackfillsResult
	for _, id := range ids {
		b, queued, ok, err := db.advanceBackfill(ctx, id, p.Chunk)
		if err != nil {
			return res, err
		}
		if !ok {
			continue
		}
		res.Advanced = append(res.Advanced, b)
		res.Queued += queued
		if b.State == hub.BackfillDone {
			res.Finished++
		}
	}
	return res, nil
}

// advanceBackfill walks one chunk of one backfill in one write transaction
// (SQLite has one writer: ingest cannot interleave, so the tenant's last
// sequence read on start is final).
func (db *DB) advanceBackfill(ctx context.Context, subscriptionID string, chunk int) (hub.Backfill, int, bool, error) {
	now := db.opts.Stamp()
	var b hub.Backfill
	var queued int
	ok := false
	err := db.tx(ctx, func(tx *sql.Tx) error {
		sub := hub.Subscription{ID: subscriptionID, Enabled: true, VerificationState: hub.VerificationActive}
		var et string
		var filters *string
		err := tx.QueryRowContext(ctx, `SELECT tenant_id, event_types, filters FROM subscriptions
			WHERE id = ? AND enabled = 1 AND verification_state = 'active' AND deleted_at IS NULL`, subscriptionID).
			Scan(&sub.TenantID, &et, &filters)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(et), &sub.EventTypes); err != nil {
			return err
		}
		if filters != nil {
			sub.Filters = store.Filters([]byte(*filters))
		}
		b, err = scanBackfill(tx.QueryRowContext(ctx, `SELECT `+backfillColumns+` FROM subscription_backfills
			WHERE subscription_id = ? AND state = 'running'`, subscriptionID))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if b.StartedAt == nil {
			if err := tx.QueryRowContext(ctx, `SELECT last_sequence FROM tenants WHERE id = ?`, sub.TenantID).
				Scan(&b.UntilSequence); err != nil {
				return err
			}
			b.StartedAt = &now
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+eventSelect+` FROM events
			WHERE tenant_id = ? AND sequence > ? AND sequence <= ? AND received_at >= ?
			ORDER BY sequence LIMIT ?`, sub.TenantID, b.Sequence, b.UntilSequence, micros(b.Since), chunk)
		if err != nil {
			return err
		}
		events, err := collect(rows, scanEvent)
		if err != nil {
			return err
		}
		had := make(map[int64]bool)
		if len(events) > 0 {
			rows, err := tx.QueryContext(ctx, `SELECT event_sequence FROM delivery_jobs
				WHERE subscription_id = ? AND event_sequence BETWEEN ? AND ?`,
				subscriptionID, events[0].Sequence, events[len(events)-1].Sequence)
			if err != nil {
				return err
			}
			existing, err := collect(rows, func(r scanner) (int64, error) {
				var s int64
				return s, r.Scan(&s)
			})
			if err != nil {
				return err
			}
			for _, s := range existing {
				had[s] = true
			}
		}
		jobs := store.BackfillChunk(&b, &sub, events, had, chunk, now)
		if err := insertJobs(ctx, tx, jobs); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE subscription_backfills SET state = ?, until_sequence = ?,
			cursor_sequence = ?, matched = ?, queued = ?, skipped = ?, started_at = ?, finished_at = ?, updated_at = ?
			WHERE subscription_id = ?`, string(b.State), b.UntilSequence, b.Sequence, b.Matched, b.Queued, b.Skipped,
			optMicros(b.StartedAt), optMicros(b.FinishedAt), micros(now), subscriptionID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE subscriptions SET backfill_hold = ? WHERE id = ?`,
			store.BackfillHold(b), subscriptionID); err != nil {
			return err
		}
		queued, ok = len(jobs), true
		return nil
	})
	return b, queued, ok, err
}
