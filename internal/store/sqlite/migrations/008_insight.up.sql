-- Insight (docs/insight.md): health rollups, the catalog of types seen and producer
-- manifests, event and delivery lookups, and when a key was last used.
-- Times are microseconds since the epoch, as everywhere in this driver.

CREATE TABLE subscription_rollups (
    subscription_id TEXT NOT NULL,
    bucket_start    INTEGER NOT NULL,
    successes       INTEGER NOT NULL DEFAULT 0,
    failures        INTEGER NOT NULL DEFAULT 0,
    h0 INTEGER NOT NULL DEFAULT 0,
    h1 INTEGER NOT NULL DEFAULT 0,
    h2 INTEGER NOT NULL DEFAULT 0,
    h3 INTEGER NOT NULL DEFAULT 0,
    h4 INTEGER NOT NULL DEFAULT 0,
    h5 INTEGER NOT NULL DEFAULT 0,
    h6 INTEGER NOT NULL DEFAULT 0,
    h7 INTEGER NOT NULL DEFAULT 0,
    h8 INTEGER NOT NULL DEFAULT 0,
    h9 INTEGER NOT NULL DEFAULT 0,
    h10 INTEGER NOT NULL DEFAULT 0,
    h11 INTEGER NOT NULL DEFAULT 0,
    last_success_at INTEGER,
    last_failure_at INTEGER,
    last_error      TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (subscription_id, bucket_start)
) STRICT;
CREATE INDEX subscription_rollups_start ON subscription_rollups (bucket_start);

CREATE TABLE event_types_seen (
    tenant_id     TEXT NOT NULL,
    event_type    TEXT NOT NULL,
    schema_major  INTEGER NOT NULL,
    source        TEXT NOT NULL,
    first_seen_at INTEGER NOT NULL,
    last_seen_at  INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, event_type, schema_major)
) STRICT;

CREATE TABLE manifest_sources (
    url             TEXT PRIMARY KEY,
    manifest        BLOB,
    last_fetched_at INTEGER,
    last_success_at INTEGER,
    last_error      TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX delivery_jobs_event ON delivery_jobs (tenant_id, event_id);
CREATE INDEX delivery_jobs_dead ON delivery_jobs (subscription_id) WHERE status = 'dead_lettered';

ALTER TABLE api_keys ADD COLUMN last_used_at INTEGER;
