package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"math"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func (db *DB) ListRejections(ctx context.Context, p store.ListRejectionsParams) (_ []hub.Rejection, err error) {
	defer wrap(&err, "ListRejections")
	before := p.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := db.r.QueryContext(ctx,
		`SELECT `+rejectionColumns+` FROM rejected_records WHERE id < ? ORDER BY id DESC LIMIT ?`,
		before, store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return collect(rows, scanRejection)
}

func (db *DB) GetRejection(ctx context.Context, id int64) (_ hub.Rejection, err error) {
	defer wrap(&err, "GetRejection")
	rej, err := scanRejection(db.r.QueryRowContext(ctx, `SELECT `+rejectionColumns+` FROM rejected_records WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return hub.Rejection{}, store.RejectionNotFound(id)
	}
	return rej, err
}

const rejectionColumns = `id, topic, kafka_partition, kafka_offset, ce_id, headers, reason, rejected_at`

func scanRejection(r scanner) (hub.Rejection, error) {
	var rej hub.Rejection
	var headers string
	var at int64
	err := r.Scan(&rej.ID, &rej.Topic, &rej.Partition, &rej.Offset, &rej.CEID, &headers, &rej.Reason, &at)
	if err == nil {
		err = json.Unmarshal([]byte(headers), &rej.Headers)
	}
	rej.RejectedAt = fromMicros(at)
	return rej, err
}

const eventSelect = `tenant_id, sequence, ce_id, spec_version, ce_type, event_type, source, subject, time,
	schema_version, schema_major, data_content_type, data_schema, extensions, data,
	topic, kafka_partition, kafka_offset, received_at, trace_parent, trace_state, producer_key_id`

func scanEvent(r scanner) (hub.Event, error) {
	var ev hub.Event
	var ext *string
	var received int64
	err := r.Scan(&ev.TenantID, &ev.Sequence, &ev.ID, &ev.SpecVersion, &ev.Type, &ev.EventType, &ev.Source,
		&ev.Subject, &ev.Time, &ev.SchemaVersion, &ev.SchemaMajor, &ev.DataContentType, &ev.DataSchema,
		&ext, &ev.Data, &ev.Topic, &ev.Partition, &ev.Offset, &received, &ev.TraceParent, &ev.TraceState, &ev.ProducerKeyID)
	if err == nil && ext != nil {
		err = json.Unmarshal([]byte(*ext), &ev.Extensions)
	}
	ev.ReceivedAt = fromMicros(received)
	return ev, err
}

func (db *DB) ListEvents(ctx context.Context, p store.ListEventsParams) (_ []hub.Event, err error) {
	defer wrap(&err, "ListEvents")
	args := []any{p.TenantID, p.After}
	filter, order := "", "sequence"
	if p.Newest {
		before := p.Before
		if before <= 0 {
			before = math.MaxInt64
		}
		args, order = []any{p.TenantID, int64(0)}, "sequence DESC"
		filter = ` AND sequence < ?`
		args = append(args, before)
	}
	if len(p.Types) > 0 {
		filter += ` AND event_type IN (` + placeholders(len(p.Types)) + `)`
		args = append(args, anys(p.Types)...)
	}
	args = append(args, store.ClampLimit(p.Limit, 100, 1000))
	rows, err := db.r.QueryContext(ctx, `SELECT `+eventSelect+` FROM events
		WHERE tenant_id = ? AND sequence > ?`+filter+` ORDER BY `+order+` LIMIT ?`, args...)
	if err != nil {
		return nil, err
	}
	return collect(rows, scanEvent)
}
