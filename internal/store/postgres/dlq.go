package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

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
	defer db.budgets.use(ctx, store.BudgetIngest)()
	now := db.opts.Stamp()
	b := &pgx.Batch{}
	for _, r := range recs {
		r = store.SafeDLQRecord(r)
		headers, err := json.Marshal(r.Headers)
		if err != nil {
			return err
		}
		b.Queue(`INSERT INTO producer_dlq_records (topic, kafka_partition, kafka_offset, source_topic, source_partition,
			source_offset, payload_omitted, ce_id, tenant_id, headers, value_excerpt, received_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
			ON CONFLICT (topic, kafka_partition, kafka_offset) DO NOTHING`,
			r.Topic, r.Partition, r.Offset, r.SourceTopic, r.SourcePartition, r.SourceOffset, r.PayloadOmitted,
			r.CEID, r.TenantID, headers, r.ValueExcerpt, now)
	}
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
}

func (db *DB) ListDLQRecords(ctx context.Context, p store.ListDLQParams) (_ []store.DLQRecord, err error) {
	defer wrap(&err, "ListDLQRecords")
	defer db.budgets.use(ctx, store.BudgetAPI)()
	before := p.Before
	if before <= 0 {
		before = 1<<63 - 1
	}
	var since *time.Time
	if !p.Since.IsZero() {
		since = &p.Since
	}
	rows, err := db.pool.Query(ctx,
		`SELECT id, topic, kafka_partition, kafka_offset, source_topic, source_partition, source_offset,
			payload_omitted, ce_id, tenant_id, headers, value_excerpt, received_at
		 FROM producer_dlq_records
		 WHERE id < $1 AND ($2 = '' OR topic = $2) AND ($3 = '' OR tenant_id = $3)
		   AND ($4::timestamptz IS NULL OR received_at >= $4)
		 ORDER BY id DESC LIMIT $5`,
		before, p.Topic, p.TenantID, since, store.ClampLimit(p.Limit, 50, 1000))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.DLQRecord, error) {
		var d store.DLQRecord
		var headers []byte
		err := r.Scan(&d.ID, &d.Topic, &d.Partition, &d.Offset, &d.SourceTopic, &d.SourcePartition, &d.SourceOffset,
			&d.PayloadOmitted, &d.CEID, &d.TenantID, &headers, &d.ValueExcerpt, &d.ReceivedAt)
		if err == nil {
			err = json.Unmarshal(headers, &d.Headers)
		}
		d.ReceivedAt = d.ReceivedAt.UTC()
		return d, err
	})
}

func (db *DB) PruneDLQRecords(ctx context.Context, before time.Time, batch int) (_ int, err error) {
	defer wrap(&err, "PruneDLQRecords")
	defer db.budgets.use(ctx, store.BudgetDispatch)()
	if batch <= 0 {
		batch = config.DefaultPruneBatch
	}
	tag, err := db.pool.Exec(ctx, `DELETE FROM producer_dlq_records WHERE id IN (
		SELECT id FROM producer_dlq_records WHERE received_at < $1 ORDER BY received_at LIMIT $2)`, before, batch)
	return int(tag.RowsAffected()), err
}
