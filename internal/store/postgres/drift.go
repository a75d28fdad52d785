package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) RecordTopicDrift(ctx context.Context, current []hub.TopicDrift) (_ store.DriftChanges, err error) {
	defer wrap(&err, "RecordTopicDrift")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	now := db.opts.Stamp()
	var c store.DriftChanges
	err = pgx.BeginTxFunc(ctx, db.pool, ingestTx, func(tx pgx.Tx) error {
		// Two checks that overlap (a lock lost with its session) write
		// one after the other.
		if _, err := tx.Exec(ctx, `LOCK TABLE topic_drift IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		stored, err := listDrift(ctx, tx)
		if err != nil {
			return err
		}
		c = store.DiffDrift(stored, current)
		if c.Empty() {
			return nil
		}
		for _, d := range c.Resolved {
			if _, err := tx.Exec(ctx, `DELETE FROM topic_drift WHERE topic = $1 AND kind = $2`, d.Topic, d.Kind); err != nil {
				return err
			}
		}
		for _, d := range c.Detected {
			if _, err := tx.Exec(ctx, `INSERT INTO topic_drift (topic, kind, detected_at) VALUES ($1, $2, $3)`,
				d.Topic, d.Kind, now); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `SELECT id FROM tenants WHERE status = 'active' ORDER BY id`)
		if err != nil {
			return err
		}
		tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		events := store.TopicDriftEvents(tenants, c, now)
		if len(events) == 0 {
			return nil
		}
		w := &pgx.Batch{}
		if _, err := db.admitAndMatch(ctx, tx, events, now, w, nil, nil, true); err != nil {
			return err
		}
		return tx.SendBatch(ctx, w).Close()
	})
	if err != nil {
		return store.DriftChanges{}, err
	}
	return c, nil
}

func (db *DB) ListTopicDrift(ctx context.Context) (_ []hub.TopicDrift, err error) {
	defer wrap(&err, "ListTopicDrift")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	return listDrift(ctx, db.pool)
}

// listDrift reads the stored differences.
func listDrift(ctx context.Context, q pgxtx) ([]hub.TopicDrift, error) {
	rows, err := q.Query(ctx, `SELECT topic, kind FROM topic_drift ORDER BY topic, kind`)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.TopicDrift, error) {
		var d hub.TopicDrift
		return d, r.Scan(&d.Topic, &d.Kind)
	})
	if out == nil {
		out = []hub.TopicDrift{}
	}
	return out, err
}
