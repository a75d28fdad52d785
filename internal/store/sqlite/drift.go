package sqlite

import (
	"context"
	"database/sql"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

type driftQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (db *DB) RecordTopicDrift(ctx context.Context, current []hub.TopicDrift) (_ store.DriftChanges, err error) {
	defer wrap(&err, "RecordTopicDrift")
	now := micros(db.opts.Stamp())
	var c store.DriftChanges
	err = db.tx(ctx, func(tx *sql.Tx) error {
		stored, err := listDrift(ctx, tx)
		if err != nil {
			return err
		}
		c = store.DiffDrift(stored, current)
		if c.Empty() {
			return nil
		}
		for _, d := range c.Resolved {
			if _, err := tx.ExecContext(ctx, `DELETE FROM topic_drift WHERE topic = ? AND kind = ?`, d.Topic, d.Kind); err != nil {
				return err
			}
		}
		for _, d := range c.Detected {
			if _, err := tx.ExecContext(ctx, `INSERT INTO topic_drift (topic, kind, detected_at) VALUES (?, ?, ?)`,
				d.Topic, d.Kind, now); err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, `SELECT id FROM tenants WHERE status = 'active' ORDER BY id`)
		if err != nil {
			return err
		}
		tenants, err := collect(rows, func(r scanner) (string, error) {
			var id string
			return id, r.Scan(&id)
		})
		if err != nil {
			return err
		}
		events := store.TopicDriftEvents(tenants, c, fromMicros(now))
		if len(events) == 0 {
			return nil
		}
		outcomes, err := db.admit(ctx, tx, events, now)
		if err != nil {
			return err
		}
		_, _, err = match(ctx, tx, events, store.AcceptedTenants(events, outcomes), outcomes, fromMicros(now))
		return err
	})
	if err != nil {
		return store.DriftChanges{}, err
	}
	return c, nil
}

func (db *DB) ListTopicDrift(ctx context.Context) (_ []hub.TopicDrift, err error) {
	defer wrap(&err, "ListTopicDrift")
	return listDrift(ctx, db.r)
}

func listDrift(ctx context.Context, q driftQuerier) ([]hub.TopicDrift, error) {
	rows, err := q.QueryContext(ctx, `SELECT topic, kind FROM topic_drift ORDER BY topic, kind`)
	if err != nil {
		return nil, err
	}
	out, err := collect(rows, func(r scanner) (hub.TopicDrift, error) {
		var d hub.TopicDrift
		return d, r.Scan(&d.Topic, &d.Kind)
	})
	if out == nil {
		out = []hub.TopicDrift{}
	}
	return out, err
}
