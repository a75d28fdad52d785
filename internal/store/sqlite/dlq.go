package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// SaveDLQRecords stores the records in one transaction; a record already
// stored (a redelivery) is left as it is.
func (db *DB) SaveDLQRecords(ctx context.Context, recs []store.DLQRecord) (err error) {
	defer wrap(&err, "SaveDLQRecords")
	if len(recs) == 0 {
		return nil
	}
	now := micros(db.opts.Stamp())
	return db.tx(ctx, func(tx *sql.Tx) error {
		for _, r := range recs {
			r = store.SafeDLQRecord(r)
			headers, err := json.Marshal(r.Headers)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO producer_dlq_records (topic, kafka_partition, kafka_offset,
				source_topic, source_partition, source_offset, payload_omitted, ce_id, tenant_id, headers, value_excerpt, received_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (topic, kafka_partition, kafka_offset) DO NOTHING`,
				r.Topic, r.Partition, r.Offset, r.SourceTopic, r.SourcePartition, r.SourceOffset, r.PayloadOmitted,
				r.CEID, r.TenantID, string(headers), r.ValueExcerpt, now); err != nil {
				return err
			}
		}
		return nil
	})
}

func (db *DB) ListDLQRecords(ctx context.Context, p store.ListDLQParams) (_ []store.DLQRecord, err error) {
	defer wrap(&err, "ListDLQRecords")
	before := p.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	since := int64(-1 << 63)
	if !p.Since.IsZero() {
		since = micros(p.Since)
	}
	rows, err := db.r.QueryContext(ctx,
		`SELECT id, topic, kafka_partition, kafka_offset, source_topic, source_partition, source_offset,
			payload_omitted, ce_id, tenant_id, headers, value_excerpt, received_at
		 FROM producer_dlq_records
		 WHERE id < ?1 AND (?2 = '' OR topic = ?2) AND (?3 = '' OR tenant_id = ?3) AND received_at >= ?4
		 ORDER BY id DESC LIMIT ?5`,
		before, p.Topic, p.TenantID, since, store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return collect(rows, func(r scanner) (store.DLQRecord, error) {
		var d store.DLQRecord
		var headers string
		var at int64
		var sp, so sql.NullInt64
		err := r.Scan(&d.ID, &d.Topic, &d.Partition, &d.Offset, &d.SourceTopic, &sp, &so,
			&d.PayloadOmitted, &d.CEID, &d.TenantID, &headers, &d.ValueExcerpt, &at)
		if err == nil {
			err = json.Unmarshal([]byte(headers), &d.Headers)
		}
		if sp.Valid {
			v := int32(sp.Int64)
			d.SourcePartition = &v
		}
		if so.Valid {
			d.SourceOffset = &so.Int64
		}
		d.ReceivedAt = fromMicros(at)
		return d, err
	})
}

func (db *DB) PruneDLQRecords(ctx context.Context, before time.Time, batch int) (_ int, err error) {
	defer wrap(&err, "PruneDLQRecords")
	if batch <= 0 {
		batch = config.DefaultPruneBatch
	}
	return db.exec(ctx, `DELETE FROM producer_dlq_records WHERE id IN (
		SELECT id FROM producer_dlq_records WHERE received_at < ? ORDER BY received_at LIMIT ?)`, micros(before), batch)
}
