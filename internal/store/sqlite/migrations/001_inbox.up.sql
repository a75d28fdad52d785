-- The roster, the event inbox and the rejected records.
-- Timestamps are unix microseconds (UTC), so they sort and compare as numbers.

CREATE TABLE tenants (
    id            TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('active', 'inactive')),
    last_sequence INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
) STRICT;

CREATE TABLE events (
    tenant_id         TEXT NOT NULL,
    sequence          INTEGER NOT NULL,
    ce_id             TEXT NOT NULL,
    spec_version      TEXT NOT NULL,
    ce_type           TEXT NOT NULL,
    event_type        TEXT NOT NULL,
    source            TEXT NOT NULL,
    subject           TEXT NOT NULL DEFAULT '',
    time              TEXT NOT NULL, -- ce-time exactly as received
    schema_version    TEXT NOT NULL,
    schema_major      INTEGER NOT NULL,
    data_content_type TEXT NOT NULL,
    data_schema       TEXT NOT NULL DEFAULT '',
    extensions        TEXT,
    data              BLOB NOT NULL,
    topic             TEXT NOT NULL,
    kafka_partition   INTEGER NOT NULL,
    kafka_offset      INTEGER NOT NULL,
    received_at       INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, sequence),
    UNIQUE (tenant_id, ce_id)
) STRICT;

CREATE INDEX events_received_at ON events (received_at);

CREATE TABLE rejected_records (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    topic           TEXT NOT NULL,
    kafka_partition INTEGER NOT NULL,
    kafka_offset    INTEGER NOT NULL,
    ce_id           TEXT NOT NULL DEFAULT '',
    headers         TEXT NOT NULL,
    reason          TEXT NOT NULL,
    rejected_at     INTEGER NOT NULL
) STRICT;
