package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"math"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) ListRejections(ctx context.Context, p store.ListRejectionsParams) (_ []hub.Rejection, err error) {
	defer wrap(&err, "ListRejections")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	before := p.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := db.pool.Query(ctx,
		`SELECT `+rejectionColumns+` FROM rejected_records WHERE id < $1 ORDER BY id DESC LIMIT $2`,
		before, store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Rejection, error) { return scanRejection(r) })
}

func (db *DB) GetRejection(ctx context.Context, id int64) (_ hub.Rejection, err error) {
	defer wrap(&err, "GetRejection")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	rej, err := scanRejection(db.pool.QueryRow(ctx, `SELECT `+rejectionColumns+` FROM rejected_records WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return hub.Rejection{}, store.RejectionNotFound(id)
	}
	return rej, err
}

const rejectionColumns = `id, topic, kafka_partition, kafka_offset, ce_id, headers, reason, rejected_at`

func scanRejection(r pgx.Row) (hub.Rejection, error) {
	var rej hub.Rejection
	var headers []byte
	err := r.Scan(&rej.ID, &rej.Topic, &rej.Partition, &rej.Offset, &rej.CEID, &headers, &rej.Reason, &rej.RejectedAt)
	if err == nil {
		err = json.Unmarshal(headers, &rej.Headers)
	}
	rej.RejectedAt = rej.RejectedAt.UTC()
	return rej, err
}

const eventSelect = `tenant_id, sequence, ce_id, spec_version, ce_type, event_type, source, subject, time,
	schema_version, schema_major, data_content_type, data_schema, extensions, data,
	topic, kafka_partition, kafka_offset, received_at, trace_parent, trace_state, producer_key_id`

func scanEvent(r pgx.Row) (hub.Event, error) {
	var ev hub.Event
	var ext []byte
	err := r.Scan(&ev.TenantID, &ev.Sequence, &ev.ID, &ev.SpecVersion, &ev.Type, &ev.EventType, &ev.Source,
		&ev.Subject, &ev.Time, &ev.SchemaVersion, &ev.SchemaMajor, &ev.DataContentType, &ev.DataSchema,
		&ext, &ev.Data, &ev.Topic, &ev.Partition, &ev.Offset, &ev.ReceivedAt, &ev.TraceParent, &ev.TraceState, &ev.ProducerKeyID)
	if err == nil && ext != nil {
		err = json.Unmarshal(ext, &ev.Extensions)
	}
	ev.ReceivedAt = ev.ReceivedAt.UTC()
	return ev, err
}

func collectEvents(rows pgx.Rows, err error) ([]hub.Event, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Event, error) { return scanEvent(r) })
}

func (db *DB) ListEvents(ctx context.Context, p store.ListEventsParams) (_ []hub.Event, err error) {
	defer wrap(&err, "ListEvents")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	types := p.Types
	if types == nil {
		types = []string{} // NULL would make cardinality() NULL and match nothing
	}
	if p.Newest {
		before := p.Before
		if before <= 0 {
			before = math.MaxInt64
		}
		return collectEvents(db.pool.Query(ctx, `SELECT `+eventSelect+` FROM events
			WHERE tenant_id = $1 AND sequence < $2 AND (cardinality($3::text[]) = 0 OR event_type = ANY($3))
			ORDER BY sequence DESC LIMIT $4`,
			p.TenantID, before, types, store.ClampLimit(p.Limit, 100, 1000)))
	}
	return collectEvents(db.pool.Query(ctx, `SELECT `+eventSelect+` FROM events
		WHERE tenant_id = $1 AND sequence > $2 AND (cardinality($3::text[]) = 0 OR event_type = ANY($3))
		ORDER BY sequence LIMIT $4`,
		p.TenantID, p.After, types, store.ClampLimit(p.Limit, 100, 1000)))
}
