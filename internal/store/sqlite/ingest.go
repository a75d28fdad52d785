package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Ingest runs the batch in one write transaction: Write with records
// only. SQLite has a single writer, so reading the roster and the stored
// ids inside the transaction is already race-free.
func (db *DB) Ingest(ctx context.Context, p store.IngestParams) (store.IngestResult, error) {
	res, err := db.Write(ctx, store.WriteParams{Ingest: p})
	return res.Ingest, err
}

// Write runs one batch of the process's writer (docs/architecture.md, "The
// writer") in one write transaction: the records (leasing at birth what
// the offer has room for), then the results, then the gathered
// statistics. With one writer nothing interleaves.
func (db *DB) Write(ctx context.Context, p store.WriteParams) (_ store.WriteResult, err error) {
	defer wrap(&err, "Write")
	defer func() { err = classify(err) }()
	if p.Empty() {
		return store.WriteResult{}, nil
	}
	offer := p.Offer
	if len(p.Ingest.Events) == 0 {
		offer = nil
	}
	var res store.WriteResult
	var jobs []hub.Job
	stamp := db.opts.Stamp()
	now := micros(stamp)
	err = db.tx(ctx, func(tx *sql.Tx) error {
		res, jobs = store.WriteResult{}, nil
		if len(p.Ingest.Events) > 0 {
			outcomes, err := db.admit(ctx, tx, p.Ingest.Events, now)
			if err != nil {
				return err
			}
			res.Ingest.Outcomes, res.Ingest.Tenants = outcomes, store.AcceptedTenants(p.Ingest.Events, outcomes)
			if jobs, err = matchJobs(ctx, tx, p.Ingest.Events, res.Ingest.Tenants, outcomes, stamp); err != nil {
				return err
			}
			res.Ingest.Jobs, res.Ingest.Subscriptions = len(jobs), store.SubscriptionsOfJobs(jobs)
			if res.Born, err = bearJobs(ctx, tx, jobs, offer, stamp); err != nil {
				return err
			}
			if !p.DeferStats {
				if err := noteTypes(ctx, tx, p.Ingest.Events, outcomes, now); err != nil {
					return err
				}
			}
		}
		if len(p.Ingest.Rejected) > 0 {
			if err := db.reject(ctx, tx, p.Ingest.Rejected, now); err != nil {
				return err
			}
		}
		if len(p.Complete.Completions) > 0 {
			var err error
			if res.Complete, err = db.complete(ctx, tx, p.Complete, stamp, !p.DeferStats); err != nil {
				return err
			}
		}
		return writeStats(ctx, tx, p.Stats)
	})
	if err != nil {
		return store.WriteResult{}, err
	}
	db.wakes.Notify(store.PendingSubscriptions(jobs, res.Born))
	return res, nil
}

// ListenJobs tells p.OnJobs of the jobs ingest creates, after their
// commit. SQLite is one process's: no other process creates jobs.
func (db *DB) ListenJobs(ctx context.Context, p store.ListenParams) error {
	defer db.wakes.Add(p.OnJobs)()
	if p.Ready != nil {
		p.Ready()
	}
	<-ctx.Done()
	return nil
}

func (db *DB) admit(ctx context.Context, tx *sql.Tx, events []hub.Event, now int64) ([]store.Outcome, error) {
	ids := store.Tenants(events)
	roster := make(map[string]*store.RosterEntry, len(ids))
	rows, err := tx.QueryContext(ctx,
		`SELECT id, status, last_sequence FROM tenants WHERE id IN (`+placeholders(len(ids))+`)`, anys(ids)...)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id string
		var e store.RosterEntry
		if err := rows.Scan(&id, &e.Status, &e.LastSequence); err != nil {
			rows.Close()
			return nil, err
		}
		roster[id] = &e
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}

	exists, err := tx.PrepareContext(ctx, `SELECT 1 FROM events WHERE tenant_id = ? AND ce_id = ?`)
	if err != nil {
		return nil, err
	}
	defer exists.Close()
	stored := make(map[store.EventKey]bool)
	for _, ev := range events {
		if e := roster[ev.TenantID]; e == nil || e.Status != hub.TenantActive {
			continue
		}
		var one int
		switch err := exists.QueryRowContext(ctx, ev.TenantID, ev.ID).Scan(&one); err {
		case nil:
			stored[store.EventKey{TenantID: ev.TenantID, ID: ev.ID}] = true
		case sql.ErrNoRows:
		default:
			return nil, err
		}
	}

	outcomes := store.Admit(events, roster, stored)
	insert, err := tx.PrepareContext(ctx, `INSERT INTO events (
		tenant_id, sequence, ce_id, spec_version, ce_type, event_type, source, subject, time,
		schema_version, schema_major, data_content_type, data_schema, extensions, data,
		topic, kafka_partition, kafka_offset, received_at, trace_parent, trace_state, producer_key_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return nil, err
	}
	defer insert.Close()
	for i, ev := range events {
		if outcomes[i].Verdict != hub.Accept {
			continue
		}
		var ext any
		if len(ev.Extensions) > 0 {
			b, err := json.Marshal(ev.Extensions)
			if err != nil {
				return nil, err
			}
			ext = string(b)
		}
		data := ev.Data
		if data == nil {
			data = []byte{} // the column is NOT NULL; an empty value is still a value
		}
		if _, err := insert.ExecContext(ctx, ev.TenantID, outcomes[i].Sequence, ev.ID, ev.SpecVersion, ev.Type,
			ev.EventType, ev.Source, ev.Subject, ev.Time, ev.SchemaVersion, ev.SchemaMajor, ev.DataContentType,
			ev.DataSchema, ext, data, ev.Topic, ev.Partition, ev.Offset, now, ev.TraceParent, ev.TraceState, ev.ProducerKeyID); err != nil {
			return nil, err
		}
	}
	for id, e := range roster {
		if _, err := tx.ExecContext(ctx, `UPDATE tenants SET last_sequence = ? WHERE id = ? AND last_sequence <> ?`,
			e.LastSequence, id, e.LastSequence); err != nil {
			return nil, err
		}
	}
	return outcomes, nil
}

func (db *DB) reject(ctx context.Context, tx *sql.Tx, rejected []hub.Rejection, now int64) error {
	insert, err := tx.PrepareContext(ctx, `INSERT INTO rejected_records
		(topic, kafka_partition, kafka_offset, ce_id, headers, reason, rejected_at) VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer insert.Close()
	for _, r := range rejected {
		r = store.SafeRejection(r)
		headers, err := json.Marshal(r.Headers)
		if err != nil {
			return err
		}
		if _, err := insert.ExecContext(ctx, r.Topic, r.Partition, r.Offset, r.CEID, string(headers), r.Reason, now); err != nil {
			return err
		}
	}
	_, err = tx.ExecContext(ctx,
		`DELETE FROM rejected_records WHERE id <= (SELECT id FROM rejected_records ORDER BY id DESC LIMIT 1 OFFSET ?)`,
		db.opts.MaxRejections)
	return err
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func anys[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// match creates the delivery jobs of the batch's accepted events, of
// tenants (AcceptedTenants), in the ingest transaction: an event is never
// stored without its jobs. It returns how many it made and their
// subscriptions, once each.
func match(ctx context.Context, tx *sql.Tx, events []hub.Event, tenants []string, outcomes []store.Outcome, now time.Time) (int, []string, error) {
	jobs, err := matchJobs(ctx, tx, events, tenants, outcomes, now)
	if err != nil {
		return 0, nil, err
	}
	return len(jobs), store.SubscriptionsOfJobs(jobs), insertJobs(ctx, tx, jobs)
}

// withMatched reads the tenants' deliverable subscriptions and gives
// matching's jobs to fn.
func withMatched(ctx context.Context, tx *sql.Tx, events []hub.Event, tenants []string, outcomes []store.Outcome, now time.Time, fn func([]hub.Job)) error {
	if len(tenants) == 0 {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, tenant_id, event_types, filters FROM subscriptions
		WHERE tenant_id IN (`+placeholders(len(tenants))+`) AND enabled = 1 AND verification_state = 'active' AND deleted_at IS NULL`,
		anys(tenants)...)
	if err != nil {
		return err
	}
	subs, err := collect(rows, func(r scanner) (hub.Subscription, error) {
		s := hub.Subscription{Enabled: true, VerificationState: hub.VerificationActive}
		var et string
		var filters *string
		if err := r.Scan(&s.ID, &s.TenantID, &et, &filters); err != nil {
			return s, err
		}
		if filters != nil {
			s.Filters = store.Filters([]byte(*filters))
		}
		return s, json.Unmarshal([]byte(et), &s.EventTypes)
	})
	if err != nil {
		return err
	}
	fn(store.Match(events, outcomes, subs, now))
	return nil
}

// matchJobs is match without the insert: Ingest decides first which jobs
// are born leased.
func matchJobs(ctx context.Context, tx *sql.Tx, events []hub.Event, tenants []string, outcomes []store.Outcome, now time.Time) ([]hub.Job, error) {
	var jobs []hub.Job
	err := withMatched(ctx, tx, events, tenants, outcomes, now, func(js []hub.Job) { jobs = js })
	return jobs, err
}
