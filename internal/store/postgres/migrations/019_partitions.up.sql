-- Time partitions (docs/operations.md): events, delivery_jobs and delivery_attempts
-- become range-partitioned by week of creation (weeks start on Monday
-- 00:00 UTC), so retention drops a week's partition instead of deleting
-- its rows one by one.
--
--   events            by received_at;
--   delivery_jobs     by id: job ids embed their creation's millisecond
--                     (hub.NewID, UUIDv7 layout), so the week's bounds are
--                     the ids hub.IDPrefixAt('dlv', week) and the primary
--                     key stays (id): a job is still found by id alone;
--   delivery_attempts by job_id, with the same bounds: a job's attempts
--                     live in its week and go with it.
--
-- Each has a DEFAULT partition, so an insert never fails for lack of a
-- week (an id made far ahead, a clock far off); streaming_hub_add_week
-- moves such rows out of it when their week is made.
--
-- A partitioned table's unique keys must hold the partition key, so the
-- inbox's keys change: (tenant_id, sequence, received_at) is its primary
-- key and (tenant_id, ce_id) a plain index. Neither loses a guarantee:
-- ingest assigns sequences and checks ce-ids against the stored ones while
-- it holds the tenants' rows locked (ingest.go), which is what has kept
-- them unique; the constraints only repeated it.
--
-- This migration converts a schema in place and keeps every row: the old
-- tables are renamed, the partitioned ones made with the weeks the rows
-- need, the rows copied with one scan of each table, the indexes built
-- once on the full partitions, the old tables dropped. It runs in the
-- migration's transaction (all or nothing) and holds the tables for its
-- length: run `streaming-hub migrate --timeout ...` with the hub stopped
-- (docs/operations.md gives the figures).

-- The lowest id NewID(prefix, t) can return (hub.IDPrefixAt).
CREATE FUNCTION streaming_hub_id_at(prefix text, t timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
	SELECT prefix || '_' || lpad(to_hex(floor(extract(epoch FROM t) * 1000)::bigint), 12, '0') || repeat('0', 20)
$$;

-- streaming_hub_add_week makes the week holding t in each of the three
-- tables unless it exists: a plain table filled with the week's rows from
-- the default partition (if any), then attached, which builds its indexes.
-- It returns how many partitions it made. only_parent, when given, limits
-- it to that table: the periodic task makes each table's week in its own
-- transaction, so it never holds one table's default partition while it
-- waits for another's (a claim reads jobs then events, ingest writes
-- events then jobs: holding both would close a cycle with either).
CREATE FUNCTION streaming_hub_add_week(t timestamptz, only_parent text DEFAULT NULL) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
	ws timestamptz := date_trunc('week', t AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
	we timestamptz := ws + interval '7 days';
	suffix text := to_char(ws AT TIME ZONE 'UTC', 'YYYYMMDD');
	made integer := 0;
	p record;
	part text;
BEGIN
	FOR p IN SELECT * FROM (VALUES
		('events', 'received_at', quote_literal(ws) || '::timestamptz', quote_literal(we) || '::timestamptz'),
		('delivery_jobs', 'id', quote_literal(streaming_hub_id_at('dlv', ws)), quote_literal(streaming_hub_id_at('dlv', we))),
		('delivery_attempts', 'job_id', quote_literal(streaming_hub_id_at('dlv', ws)), quote_literal(streaming_hub_id_at('dlv', we)))
	) AS v(parent, key, lo, hi)
	LOOP
		CONTINUE WHEN only_parent IS NOT NULL AND p.parent <> only_parent;
		part := p.parent || '_w' || suffix;
		CONTINUE WHEN to_regclass(quote_ident(part)) IS NOT NULL;
		EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)', part, p.parent);
		IF p.parent = 'delivery_jobs' THEN
			-- A queue table: vacuum it often (004).
			EXECUTE format('ALTER TABLE %I SET (autovacuum_vacuum_scale_factor = 0.01,
				autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02)', part);
		END IF;
		IF to_regclass(quote_ident(p.parent || '_default')) IS NOT NULL THEN
			EXECUTE format('WITH moved AS (DELETE FROM %I WHERE %I >= %s AND %I < %s RETURNING *) INSERT INTO %I SELECT * FROM moved',
				p.parent || '_default', p.key, p.lo, p.key, p.hi, part);
		END IF;
		EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', p.parent, part, p.lo, p.hi);
		made := made + 1;
	END LOOP;
	RETURN made;
END
$$;

-- The old tables step aside: their keys and indexes go (index names are
-- the schema's, and the new tables take them). Their index definitions,
-- foreign keys and unique constraints (but the inbox's dedup key, which
-- becomes an index) are kept, to be made again on the new tables: a unique
-- constraint without the partition key fails the migration rather than
-- being lost.
CREATE TEMPORARY TABLE streaming_hub_019_defs (parent text, kind text, def text) ON COMMIT DROP;
DO $$
DECLARE
	t text;
	r record;
BEGIN
	FOREACH t IN ARRAY ARRAY['events', 'delivery_jobs', 'delivery_attempts'] LOOP
		EXECUTE format('ALTER TABLE %I RENAME TO %I', t, t || '_unpartitioned');
		FOR r IN SELECT conname, contype, pg_get_constraintdef(oid) AS def FROM pg_constraint
			WHERE conrelid = (t || '_unpartitioned')::regclass AND contype IN ('p', 'u', 'f') LOOP
			IF r.contype <> 'p' AND r.conname <> 'events_tenant_id_ce_id_key' THEN
				INSERT INTO streaming_hub_019_defs VALUES (t, 'constraint', format('ALTER TABLE %I ADD CONSTRAINT %I %s', t, r.conname, r.def));
			END IF;
			EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t || '_unpartitioned', r.conname);
		END LOOP;
		FOR r IN SELECT i.indexrelid::regclass AS idx, pg_get_indexdef(i.indexrelid) AS def FROM pg_index i
			WHERE i.indrelid = (t || '_unpartitioned')::regclass LOOP
			INSERT INTO streaming_hub_019_defs VALUES (t, 'index',
				regexp_replace(r.def, ' ON (\S+\.)?' || t || '_unpartitioned USING ', ' ON \1' || t || ' USING '));
			EXECUTE format('DROP INDEX %s', r.idx);
		END LOOP;
	END LOOP;
END
$$;

CREATE TABLE events (LIKE events_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
	PARTITION BY RANGE (received_at);
CREATE TABLE delivery_jobs (LIKE delivery_jobs_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
	PARTITION BY RANGE (id);
CREATE TABLE delivery_attempts (LIKE delivery_attempts_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
	PARTITION BY RANGE (job_id);
CREATE TABLE events_default PARTITION OF events DEFAULT;
CREATE TABLE delivery_jobs_default PARTITION OF delivery_jobs DEFAULT;
ALTER TABLE delivery_jobs_default SET (autovacuum_vacuum_scale_factor = 0.01,
	autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);
CREATE TABLE delivery_attempts_default PARTITION OF delivery_attempts DEFAULT;

-- A week for every week the rows were made in (jobs by their creation,
-- which their ids carry; a job whose id says otherwise lands in its id's
-- week or the default partition, which is as correct). The hub makes the
-- current and coming weeks itself.
SELECT streaming_hub_add_week(w) FROM (
	SELECT date_trunc('week', received_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' FROM events_unpartitioned
	UNION SELECT date_trunc('week', created_at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' FROM delivery_jobs_unpartitioned
) AS weeks(w);

-- Every row, one scan of each table; the indexes are built afterwards,
-- once per partition.
INSERT INTO events SELECT * FROM events_unpartitioned;
INSERT INTO delivery_jobs SELECT * FROM delivery_jobs_unpartitioned;
INSERT INTO delivery_attempts SELECT * FROM delivery_attempts_unpartitioned;

ALTER TABLE events ADD CONSTRAINT events_pkey PRIMARY KEY (tenant_id, sequence, received_at);
-- Dedup and event lookups by ce-id (ingest keeps it unique per tenant).
CREATE INDEX events_ce_id ON events (tenant_id, ce_id);
ALTER TABLE delivery_jobs ADD CONSTRAINT delivery_jobs_pkey PRIMARY KEY (id);
ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_pkey PRIMARY KEY (job_id, id);
-- The old tables' other indexes and constraints (delivery_jobs' foreign key
-- to subscriptions among them).
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT def FROM streaming_hub_019_defs ORDER BY kind DESC LOOP
		EXECUTE r.def;
	END LOOP;
END
$$;

DROP TABLE events_unpartitioned, delivery_jobs_unpartitioned, delivery_attempts_unpartitioned;
ANALYZE events, delivery_jobs, delivery_attempts;
