package postgres

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Ingest persists one batch of records: Write with records only. The
// transaction is four round trips, whatever its size: BEGIN with its
// settings (ingestTx); the reads (the batch's tenants locked in id order,
// the keys already stored, the tenants' deliverable subscriptions),
// pipelined; the writes (events, sequences, jobs, types seen, rejections),
// pipelined; COMMIT. Locking the tenants first serialises sequence
// assignment per tenant (commit order = sequence order) and makes the
// dedup read race-free: no other transaction can insert for those tenants
// until this one ends. A partition's batch is often one record at low
// rates, so the round trips, not the rows, are what a transaction costs:
// the process's writer carries several partitions' batches in one.
func (db *DB) Ingest(ctx context.Context, p store.IngestParams) (store.IngestResult, error) {
	res, err := db.Write(ctx, store.WriteParams{Ingest: p})
	return res.Ingest, err
}

// ingestTx begins a transaction that admits events (Ingest, and the
// operational events of certificates and topic drift) with the settings
// its statements need, in the round trip of its BEGIN: generic plans
// always, and no sequential or bitmap scans (queueDispatchSettings says
// why). Set by the transaction's first statement instead, they would come
// too late for that statement itself, which PostgreSQL then planned
// afresh at every ingest: 0.37 ms of CPU of the 0.86 an ingest cost.
// Ingest keeps synchronous commit: an offset is committed only after its
// transaction is durable.
var ingestTx = pgx.TxOptions{BeginQuery: "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan; " +
	"SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off"}

// matched is what admitAndMatch decided and queued.
type matched struct {
	outcomes []store.Outcome
	jobs     []hub.Job
	subs     []string // of the jobs, once each
}

// admitAndMatch reads what admission and matching need (one round trip)
// and queues the events' writes in w: the inbox rows, the sequences, the
// jobs and the types seen. It serves Ingest and the operational events a
// store change emits.
//
// Unless types is false (the writer gathers them), the types the events
// carry are noted in the catalog.
//
// With an offer (the writer's, from this process's dispatcher) the jobs it
// may take are leased at birth and land in *born once w is sent; the
// caller tells other processes of the rest after the commit. Without
// one every job is pending and the notification that tells the
// dispatchers of other processes (ListenJobs) is queued in w; the caller
// tells this process's after the commit.
func (db *DB) admitAndMatch(ctx context.Context, q pgxtx, events []hub.Event, now time.Time, w *pgx.Batch,
	offer *store.BirthOffer, born *[]store.Claimed, types bool) (matched, error) {
	r, err := db.readForIngest(ctx, q, events)
	if err != nil {
		return matched{}, err
	}
	var m matched
	m.outcomes = store.Admit(events, r.roster, r.stored)
	m.jobs = store.Match(events, m.outcomes, r.subs, now)
	m.subs = store.SubscriptionsOfJobs(m.jobs)
	// Every write of the batch is one statement (composite).
	var c composite
	if err := queueEvents(&c, events, m.outcomes, r.roster, now); err != nil {
		return matched{}, err
	}
	if types {
		queueTypesSeen(&c, events, m.outcomes, now)
	}
	switch {
	case offer != nil && len(m.jobs) > 0:
		queueJobsBorn(&c, w, m.jobs, events, m.outcomes, offer, now, born)
	case c.empty() && len(m.jobs) == 0:
	default:
		queueJobs(&c, m.jobs)
		if offer == nil && len(m.subs) > 0 {
			c.queue(w, notifyJobs, db.notifyArgs(m.subs)...) // told when (and only if) it commits
		} else {
			c.queue(w, "SELECT 1")
		}
	}
	return m, nil
}

// ingestReads is what admission and matching read in the transaction.
type ingestReads struct {
	roster map[string]*store.RosterEntry
	stored map[store.EventKey]bool
	subs   []hub.Subscription
}

// readIngest reads, in one statement, what admission and matching need:
// kind 't', the batch's tenants, locked in id order first (roster); kind
// 'k', the batch's (tenant, ce-id) keys already in the inbox, each probed
// once through the unique index (a LIMIT 1 per key keeps it a probe
// whatever a generic plan made on a young table believes); kind 's', the
// tenants' deliverable subscriptions. The lock comes first (UNION ALL runs
// its branches in order), so a tenant's sequences are assigned by one
// transaction at a time from the row as it now stands. The keys are read
// with the statement's snapshot, taken before a wait for the lock: an
// event with the same ce-id committed by another partition's transaction
// during that wait is not seen, and the insert then fails on the unique
// index; the batch is retried whole, and found a duplicate.
const readIngest = `WITH roster AS MATERIALIZED (
	SELECT id, status, last_sequence FROM tenants WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE
)
SELECT 't', id, status, last_sequence, NULL::jsonb, NULL::jsonb FROM roster
UNION ALL
SELECT 'k', k.tenant_id, k.ce_id, NULL, NULL, NULL FROM unnest($2::text[], $3::text[]) AS k(tenant_id, ce_id)
	CROSS JOIN LATERAL (SELECT 1 FROM events e WHERE e.tenant_id = k.tenant_id AND e.ce_id = k.ce_id LIMIT 1) stored
UNION ALL
SELECT 's', id, tenant_id, NULL, event_types, filters FROM subscriptions
	WHERE tenant_id = ANY($1) AND enabled AND verification_state = 'active' AND deleted_at IS NULL`

// readForIngest reads the batch's tenants (locked), the keys already
// stored and the deliverable subscriptions of the tenants (readIngest).
// Subscriptions are read for every tenant of the batch, admitted or not:
// matching only looks at accepted events.
func (db *DB) readForIngest(ctx context.Context, tx pgxtx, events []hub.Event) (ingestReads, error) {
	r := ingestReads{roster: make(map[string]*store.RosterEntry), stored: make(map[store.EventKey]bool)}
	tenants := store.Tenants(events)
	keyTenants, keyIDs := make([]string, len(events)), make([]string, len(events))
	for i, ev := range events {
		keyTenants[i], keyIDs[i] = ev.TenantID, ev.ID
	}
	rows, err := tx.Query(ctx, readIngest, tenants, keyTenants, keyIDs)
	if err != nil {
		return r, err
	}
	var kind, a, b string
	var n *int64
	var et, filters []byte
	_, err = pgx.ForEachRow(rows, []any{&kind, &a, &b, &n, &et, &filters}, func() error {
		switch kind {
		case "t":
			r.roster[a] = &store.RosterEntry{Status: hub.TenantStatus(b), LastSequence: *n}
		case "k":
			r.stored[store.EventKey{TenantID: a, ID: b}] = true
		case "s":
			s := hub.Subscription{ID: a, TenantID: b, Enabled: true, VerificationState: hub.VerificationActive,
				Filters: store.Filters(filters)}
			if err := json.Unmarshal(et, &s.EventTypes); err != nil {
				return err
			}
			r.subs = append(r.subs, s)
		}
		return nil
	})
	return r, err
}

const insertEvents = `INSERT INTO events (tenant_id, sequence, ce_id, spec_version, ce_type, event_type, source, subject,
	time, schema_version, schema_major, data_content_type, data_schema, extensions, data,
	topic, kafka_partition, kafka_offset, received_at, trace_parent, trace_state, producer_key_id)
SELECT t, seq, id, sv, ct, et, src, subj, tm, schv, maj, dct, ds, ext::jsonb, d, top, part, off, $20, tp, ts, pk
FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
	$9::text[], $10::text[], $11::int[], $12::text[], $13::text[], $14::text[], $15::bytea[],
	$16::text[], $17::int[], $18::bigint[], $19::text[], $21::text[], $22::text[])
	AS v(t, seq, id, sv, ct, et, src, subj, tm, schv, maj, dct, ds, ext, d, top, part, off, tp, ts, pk)`

// queueEvents queues the accepted events' rows and the tenants' new last
// sequences.
func queueEvents(w writer, events []hub.Event, outcomes []store.Outcome, roster map[string]*store.RosterEntry, now time.Time) error {
	var c struct {
		tenant, id, sv, ct, et, src, subj, tm, schv, dct, ds, top, tp, ts, pk []string
		ext                                                                   []*string
		seq, off                                                              []int64
		maj, part                                                             []int32
		data                                                                  [][]byte
	}
	for i, ev := range events {
		if outcomes[i].Verdict != hub.Accept {
			continue
		}
		ext, err := extensionsJSON(ev.Extensions)
		if err != nil {
			return err
		}
		data := ev.Data
		if data == nil {
			data = []byte{} // the column is NOT NULL; an empty value is still a value
		}
		c.tenant, c.seq, c.id, c.sv = append(c.tenant, ev.TenantID), append(c.seq, outcomes[i].Sequence), append(c.id, ev.ID), append(c.sv, ev.SpecVersion)
		c.ct, c.et, c.src, c.subj = append(c.ct, ev.Type), append(c.et, ev.EventType), append(c.src, ev.Source), append(c.subj, ev.Subject)
		c.tm, c.schv, c.maj, c.dct = append(c.tm, ev.Time), append(c.schv, ev.SchemaVersion), append(c.maj, int32(ev.SchemaMajor)), append(c.dct, ev.DataContentType)
		c.ds, c.ext, c.data = append(c.ds, ev.DataSchema), append(c.ext, ext), append(c.data, data)
		c.top, c.part, c.off = append(c.top, ev.Topic), append(c.part, ev.Partition), append(c.off, ev.Offset)
		c.tp, c.ts, c.pk = append(c.tp, ev.TraceParent), append(c.ts, ev.TraceState), append(c.pk, ev.ProducerKeyID)
	}
	if len(c.id) == 0 {
		return nil
	}
	w.write(insertEvents, c.tenant, c.seq, c.id, c.sv, c.ct, c.et, c.src, c.subj, c.tm, c.schv, c.maj, c.dct, c.ds,
		c.ext, c.data, c.top, c.part, c.off, c.tp, now, c.ts, c.pk)
	var ids []string
	var seqs []int64
	for id, e := range roster {
		ids, seqs = append(ids, id), append(seqs, e.LastSequence)
	}
	w.write(`UPDATE tenants SET last_sequence = v.seq FROM unnest($1::text[], $2::bigint[]) AS v(id, seq)
		WHERE tenants.id = v.id AND tenants.last_sequence <> v.seq`, ids, seqs)
	return nil
}

// extensionsJSON encodes extensions for a jsonb column; nil when none.
func extensionsJSON(ext map[string]string) (*string, error) {
	if len(ext) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(ext)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return &s, nil
}

// queueRejections queues the rejected records and the trim of the table to
// the newest MaxRejections: the table is a window for operators, not an
// archive.
func (db *DB) queueRejections(b *pgx.Batch, rejected []hub.Rejection, now time.Time) error {
	var topics, ids, headers, reasons []string
	var parts []int32
	var offsets []int64
	for _, r := range rejected {
		r = store.SafeRejection(r)
		h, err := json.Marshal(r.Headers)
		if err != nil {
			return err
		}
		topics, parts, offsets = append(topics, r.Topic), append(parts, r.Partition), append(offsets, r.Offset)
		ids, headers, reasons = append(ids, r.CEID), append(headers, string(h)), append(reasons, r.Reason)
	}
	b.Queue(`INSERT INTO rejected_records (topic, kafka_partition, kafka_offset, ce_id, headers, reason, rejected_at)
		SELECT t, p, o, id, h::jsonb, r, $7 FROM unnest($1::text[], $2::int[], $3::bigint[], $4::text[], $5::text[], $6::text[])
		AS v(t, p, o, id, h, r)`, topics, parts, offsets, ids, headers, reasons, now)
	b.Queue(`DELETE FROM rejected_records WHERE id <= (SELECT id FROM rejected_records ORDER BY id DESC OFFSET $1 LIMIT 1)`,
		db.opts.MaxRejections)
	return nil
}

// queueJobs queues the insert of matching's jobs, all pending and due now.
func queueJobs(w writer, jobs []hub.Job) {
	if len(jobs) == 0 {
		return
	}
	ids, tenants, subs, eventIDs := make([]string, len(jobs)), make([]string, len(jobs)), make([]string, len(jobs)), make([]string, len(jobs))
	seqs := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i], tenants[i], subs[i], seqs[i], eventIDs[i] = j.ID, j.TenantID, j.SubscriptionID, j.EventSequence, j.EventID
	}
	now := jobs[0].CreatedAt
	w.write(`INSERT INTO delivery_jobs (id, tenant_id, subscription_id, event_sequence, event_id, status,
			next_attempt_at, enqueued_at, created_at, updated_at)
		SELECT id, t, s, seq, e, 'pending', $6, $6, $6, $6
		FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]) AS v(id, t, s, seq, e)`,
		ids, tenants, subs, seqs, eventIDs, now)
}
