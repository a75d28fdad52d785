-- Insight (docs/insight.md): health rollups, the catalog of types seen and producer
-- manifests, event and delivery lookups, and when a key was last used.

-- One row per subscription and 5-minute bucket, added to by every
-- completion batch in its transaction: a health read costs the buckets in
-- its window, never the attempts. h0..h11 are the latency histogram
-- (store.LatencyBounds).
CREATE TABLE subscription_rollups (
    subscription_id text NOT NULL,
    bucket_start    timestamptz NOT NULL,
    successes       bigint NOT NULL DEFAULT 0,
    failures        bigint NOT NULL DEFAULT 0,
    h0 bigint NOT NULL DEFAULT 0,
    h1 bigint NOT NULL DEFAULT 0,
    h2 bigint NOT NULL DEFAULT 0,
    h3 bigint NOT NULL DEFAULT 0,
    h4 bigint NOT NULL DEFAULT 0,
    h5 bigint NOT NULL DEFAULT 0,
    h6 bigint NOT NULL DEFAULT 0,
    h7 bigint NOT NULL DEFAULT 0,
    h8 bigint NOT NULL DEFAULT 0,
    h9 bigint NOT NULL DEFAULT 0,
    h10 bigint NOT NULL DEFAULT 0,
    h11 bigint NOT NULL DEFAULT 0,
    last_success_at timestamptz,
    last_failure_at timestamptz,
    last_error      text NOT NULL DEFAULT '',
    PRIMARY KEY (subscription_id, bucket_start)
);
-- Pruning past STREAMING_HUB_HEALTH_WINDOW.
CREATE INDEX subscription_rollups_start ON subscription_rollups (bucket_start);

-- The event types each tenant received, kept by ingest (one upsert per
-- tenant, type and major in a batch), so the catalog never scans the inbox.
CREATE TABLE event_types_seen (
    tenant_id     text NOT NULL,
    event_type    text NOT NULL,
    schema_major  integer NOT NULL,
    source        text NOT NULL,
    first_seen_at timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, event_type, schema_major)
);

-- Producer manifests: the last good copy of each source, and how its last
-- fetch went.
CREATE TABLE manifest_sources (
    url             text PRIMARY KEY,
    manifest        bytea,
    last_fetched_at timestamptz,
    last_success_at timestamptz,
    last_error      text NOT NULL DEFAULT ''
);

-- Lookups: an event's deliveries (and GET /v1/deliveries?event_id=).
CREATE INDEX delivery_jobs_event ON delivery_jobs (tenant_id, event_id);
-- Health's backlog: a subscription's dead letters (few; a partial index is
-- written only when a job is dead-lettered).
CREATE INDEX delivery_jobs_dead ON delivery_jobs (subscription_id) WHERE status = 'dead_lettered';

ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
