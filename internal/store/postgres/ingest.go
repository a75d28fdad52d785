package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

var eventColumns = []string{
	"tenant_id", "sequence", "ce_id", "spec_version", "ce_type", "event_type", "source", "subject",
	"time", "schema_version", "schema_major", "data_content_type", "data_schema", "extensions", "data",
	"topic", "kafka_partition", "kafka_offset", "received_at", "trace_parent", "trace_state",
}

var rejectionColumns = []string{
	"topic", "kafka_partition", "kafka_offset", "ce_id", "headers", "reason", "rejected_at",
}

// Ingest runs the batch in one transaction. The tenants of the batch are
// locked in id order first: that serialises sequence assignment per tenant
// (commit order = sequence order) and makes the dedup read race-free, since
// no other transaction can insert for those tenants until this one ends.
// Rows are written with COPY.
func (db *DB) Ingest(ctx context.Context, p store.IngestParams) (_ store.IngestResult, err error) {
	defer wrap(&err, "Ingest")
	defer db.budgets.use(ctx, store.BudgetIngest)()
	var res store.IngestResult
	now := db.opts.Stamp()
	err = pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		res = store.IngestResult{}
		if len(p.Events) > 0 {
			outcomes, err := db.admit(ctx, tx, p.Events, now)
			if err != nil {
				return err
			}
			res.Outcomes = outcomes
			if res.Jobs, err = db.match(ctx, tx, p.Events, outcomes, now); err != nil {
				return err
			}
			if err := noteTypes(ctx, tx, p.Events, outcomes, now); err != nil {
				return err
			}
		}
		if len(p.Rejected) > 0 {
			if err := db.reject(ctx, tx, p.Rejected, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.IngestResult{}, err
	}
	return res, nil
}

func (db *DB) admit(ctx context.Context, tx pgxtx, events []hub.Event, now time.Time) ([]store.Outcome, error) {
	roster := make(map[string]*store.RosterEntry)
	rows, err := tx.Query(ctx,
		`SELECT id, status, last_sequence FROM tenants WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`,
		store.Tenants(events))
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id string
		var e store.RosterEntry
		if err := rows.Scan(&id, &e.Status, &e.LastSequence); err != nil {
			return nil, err
		}
		roster[id] = &e
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}

	var tenants, ids []string
	for _, ev := range events {
		if e := roster[ev.TenantID]; e != nil && e.Status == hub.TenantActive {
			tenants, ids = append(tenants, ev.TenantID), append(ids, ev.ID)
		}
	}
	stored := make(map[store.EventKey]bool)
	if len(ids) > 0 {
		rows, err := tx.Query(ctx,
			`SELECT e.tenant_id, e.ce_id FROM unnest($1::text[], $2::text[]) AS k(tenant_id, ce_id)
			 JOIN events e ON e.tenant_id = k.tenant_id AND e.ce_id = k.ce_id`, tenants, ids)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var k store.EventKey
			if err := rows.Scan(&k.TenantID, &k.ID); err != nil {
				return nil, err
			}
			stored[k] = true
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}

	outcomes := store.Admit(events, roster, stored)
	var copyRows [][]any
	for i, ev := range events {
		if outcomes[i].Verdict != hub.Accept {
			continue
		}
		ext, err := extensionsJSON(ev.Extensions)
		if err != nil {
			return nil, err
		}
		data := ev.Data
		if data == nil {
			data = []byte{} // the column is NOT NULL; an empty value is still a value
		}
		copyRows = append(copyRows, []any{
			ev.TenantID, outcomes[i].Sequence, ev.ID, ev.SpecVersion, ev.Type, ev.EventType, ev.Source, ev.Subject,
			ev.Time, ev.SchemaVersion, ev.SchemaMajor, ev.DataContentType, ev.DataSchema, ext, data,
			ev.Topic, ev.Partition, ev.Offset, now, ev.TraceParent, ev.TraceState,
		})
	}
	if len(copyRows) == 0 {
		return outcomes, nil
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, eventColumns, pgx.CopyFromRows(copyRows)); err != nil {
		return nil, err
	}
	var seqIDs []string
	var seqs []int64
	for id, e := range roster {
		seqIDs, seqs = append(seqIDs, id), append(seqs, e.LastSequence)
	}
	_, err = tx.Exec(ctx,
		`UPDATE tenants SET last_sequence = v.seq FROM unnest($1::text[], $2::bigint[]) AS v(id, seq)
		 WHERE tenants.id = v.id AND tenants.last_sequence <> v.seq`, seqIDs, seqs)
	return outcomes, err
}

func (db *DB) reject(ctx context.Context, tx pgx.Tx, rejected []hub.Rejection, now time.Time) error {
	rows := make([][]any, len(rejected))
	for i, r := range rejected {
		r = store.SafeRejection(r)
		headers, err := json.Marshal(r.Headers)
		if err != nil {
			return err
		}
		rows[i] = []any{r.Topic, r.Partition, r.Offset, r.CEID, string(headers), r.Reason, now}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"rejected_records"}, rejectionColumns, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	// Keep the newest MaxRejections: the table is a window for operators,
	// not an archive.
	_, err := tx.Exec(ctx,
		`DELETE FROM rejected_records WHERE id <= (SELECT id FROM rejected_records ORDER BY id DESC OFFSET $1 LIMIT 1)`,
		db.opts.MaxRejections)
	return err
}

// extensionsJSON encodes extensions for a jsonb column; nil when none.
func extensionsJSON(ext map[string]string) (any, error) {
	if len(ext) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(ext)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

// match creates the delivery jobs of the batch's accepted events, in the
// ingest transaction: an event is never stored without its jobs, and a
// subscription change applies to the very next record.
func (db *DB) match(ctx context.Context, tx pgxtx, events []hub.Event, outcomes []store.Outcome, now time.Time) (int, error) {
	tenants := store.AcceptedTenants(events, outcomes)
	if len(tenants) == 0 {
		return 0, nil
	}
	rows, err := tx.Query(ctx, `SELECT id, tenant_id, event_types, filters FROM subscriptions
		WHERE tenant_id = ANY($1) AND enabled AND verification_state = 'active' AND deleted_at IS NULL`, tenants)
	if err != nil {
		return 0, err
	}
	subs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.Subscription, error) {
		s := hub.Subscription{Enabled: true, VerificationState: hub.VerificationActive}
		var et, filters []byte
		if err := r.Scan(&s.ID, &s.TenantID, &et, &filters); err != nil {
			return s, err
		}
		s.Filters = store.Filters(filters)
		return s, json.Unmarshal(et, &s.EventTypes)
	})
	if err != nil {
		return 0, err
	}
	jobs := store.Match(events, outcomes, subs, now)
	return len(jobs), copyJobs(ctx, tx, jobs)
}
