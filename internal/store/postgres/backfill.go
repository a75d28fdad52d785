package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

const backfillColumns = `subscription_id, tenant_id, since, state, until_sequence, cursor_sequence,
	matched, queued, skipped, started_at, finished_at, created_at`

func scanBackfill(row pgx.Row) (hub.Backfill, error) {
	var b hub.Backfill
	err := row.Scan(&b.SubscriptionID, &b.TenantID, &b.Since, &b.State, &b.UntilSequence, &b.Sequence,
		&b.Matched, &b.Queued, &b.Skipped, &b.StartedAt, &b.FinishedAt, &b.CreatedAt)
	b.Since, b.CreatedAt = b.Since.UTC(), b.CreatedAt.UTC()
	for _, t := range []**time.Time{&b.StartedAt, &b.FinishedAt} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	return b, err
}

// StartBackfill writes the backfill and the subscription's hold in one
// transaction: from its commit, claims take none of the subscription's
// jobs until the backfill has walked past them.
func (db *DB) StartBackfill(ctx context.Context, tenantID, subscriptionID string, since time.Time) (_ hub.Backfill, err error) {
	defer wrap(&err, "StartBackfill")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	now := db.opts.Stamp()
	var out hub.Backfill
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE subscriptions SET backfill_hold = 0
			WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL`, subscriptionID, tenantID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.SubscriptionNotFound(subscriptionID)
		}
		out, err = scanBackfill(tx.QueryRow(ctx, `INSERT INTO subscription_backfills (subscription_id, tenant_id, since,
				state, created_at, updated_at) VALUES ($1, $2, $3, 'running', $4, $4)
			ON CONFLICT (subscription_id) DO UPDATE SET since = $3, state = 'running', until_sequence = 0,
				cursor_sequence = 0, matched = 0, queued = 0, skipped = 0, started_at = NULL, finished_at = NULL,
				created_at = $4, updated_at = $4
			RETURNING `+backfillColumns, subscriptionID, tenantID, since.UTC(), now))
		return err
	})
	return out, err
}

func (db *DB) Backfills(ctx context.Context, tenantID string, subscriptionIDs []string) (_ map[string]hub.Backfill, err error) {
	defer wrap(&err, "Backfills")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	out := make(map[string]hub.Backfill)
	if len(subscriptionIDs) == 0 {
		return out, nil
	}
	rows, err := db.pool.Query(ctx, `SELECT `+backfillColumns+` FROM subscription_backfills
		WHERE tenant_id = $1 AND subscription_id = ANY($2)`, tenantID, subscriptionIDs)
	if err != nil {
		return nil, err
	}
	bs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Backfill, error) { return scanBackfill(r) })
	for _, b := range bs {
		out[b.SubscriptionID] = b
	}
	return out, err
}

func (db *DB) AdvanceBackfills(ctx context.Context, p store.AdvanceBackfillsParams) (_ store.AdvanceBackfillsResult, err error) {
	defer wrap(&err, "AdvanceBackfills")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	p = p.WithDefaults()
	rows, err := db.pool.Query(ctx, `SELECT b.subscription_id FROM subscription_backfills b
		JOIN subscriptions s ON s.id = b.subscription_id
		WHERE b.state = 'running' AND s.enabled AND s.verification_state = 'active' AND s.deleted_at IS NULL
		ORDER BY b.updated_at, b.subscription_id LIMIT $1`, p.Limit)
	if err != nil {
		return store.AdvanceBackfillsResult{}, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
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

// advanceBackfill walks one chunk of one backfill in one transaction. It
// locks the subscription row as claims do (skipping it when another holds
// it), so the hold and the jobs it frees change together. Starting, it
// takes a share lock on the tenant row, which waits for the tenant's
// ingest transactions under way: every event of a sequence up to the one
// it reads is committed, and every later one is matched by a transaction
// that sees the subscription active, so each event is either in the
// window or matched, never neither.
func (db *DB) advanceBackfill(ctx context.Context, subscriptionID string, chunk int) (hub.Backfill, int, bool, error) {
	now := db.opts.Stamp()
	var b hub.Backfill
	var queued int
	ok := false
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		sub := hub.Subscription{ID: subscriptionID, Enabled: true, VerificationState: hub.VerificationActive}
		var et, filters []byte
		err := tx.QueryRow(ctx, `SELECT tenant_id, event_types, filters FROM subscriptions
			WHERE id = $1 AND enabled AND verification_state = 'active' AND deleted_at IS NULL
			FOR NO KEY UPDATE SKIP LOCKED`, subscriptionID).Scan(&sub.TenantID, &et, &filters)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := json.Unmarshal(et, &sub.EventTypes); err != nil {
			return err
		}
		sub.Filters = store.Filters(filters)
		b, err = scanBackfill(tx.QueryRow(ctx, `SELECT `+backfillColumns+` FROM subscription_backfills
			WHERE subscription_id = $1 AND state = 'running' FOR UPDATE`, subscriptionID))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if b.StartedAt == nil {
			if err := tx.QueryRow(ctx, `SELECT last_sequence FROM tenants WHERE id = $1 FOR SHARE`, sub.TenantID).
				Scan(&b.UntilSequence); err != nil {
				return err
			}
			b.StartedAt = &now
		}
		events, err := collectEvents(tx.Query(ctx, `SELECT `+eventSelect+` FROM events
			WHERE tenant_id = $1 AND sequence > $2 AND sequence <= $3 AND received_at >= $4
			ORDER BY sequence LIMIT $5`, sub.TenantID, b.Sequence, b.UntilSequence, b.Since, chunk))
		if err != nil {
			return err
		}
		had := make(map[int64]bool)
		if len(events) > 0 {
			seqs := make([]int64, len(events))
			for i, ev := range events {
				seqs[i] = ev.Sequence
			}
			rows, err := tx.Query(ctx, `SELECT event_sequence FROM delivery_jobs
				WHERE subscription_id = $1 AND event_sequence = ANY($2)`, subscriptionID, seqs)
			if err != nil {
				return err
			}
			existing, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return err
			}
			for _, s := range existing {
				had[s] = true
			}
		}
		jobs := store.BackfillChunk(&b, &sub, events, had, chunk, now)
		w := &pgx.Batch{}
		queueJobs(batchWriter{w}, jobs)
		w.Queue(`UPDATE subscription_backfills SET state = $2, until_sequence = $3, cursor_sequence = $4,
			matched = $5, queued = $6, skipped = $7, started_at = $8, finished_at = $9, updated_at = $10
			WHERE subscription_id = $1`, b.SubscriptionID, b.State, b.UntilSequence, b.Sequence,
			b.Matched, b.Queued, b.Skipped, b.StartedAt, b.FinishedAt, now)
		w.Queue(`UPDATE subscriptions SET backfill_hold = $2 WHERE id = $1`, subscriptionID, store.BackfillHold(b))
		if err := tx.SendBatch(ctx, w).Close(); err != nil {
			return err
		}
		queued, ok = len(jobs), true
		return nil
	})
	return b, queued, ok, err
}
