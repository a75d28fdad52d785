-- The records of the producers' dead-letter topics (docs/lerian-platform.md): kept for
-- operators, never delivered, one row per (topic, partition, offset) so a
-- redelivered record is kept once; reaped after DLQ_RETENTION.
CREATE TABLE IF NOT EXISTS producer_dlq_records (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    topic            TEXT NOT NULL,
    kafka_partition  INTEGER NOT NULL,
    kafka_offset     INTEGER NOT NULL,
    source_topic     TEXT NOT NULL DEFAULT '',
    source_partition INTEGER,
    source_offset    INTEGER,
    payload_omitted  INTEGER NOT NULL DEFAULT 0,
    ce_id            TEXT NOT NULL DEFAULT '',
    tenant_id        TEXT NOT NULL DEFAULT '',
    headers          TEXT NOT NULL,
    value_excerpt    TEXT NOT NULL DEFAULT '',
    received_at      INTEGER NOT NULL,
    UNIQUE (topic, kafka_partition, kafka_offset)
) STRICT;
CREATE INDEX IF NOT EXISTS producer_dlq_records_received ON producer_dlq_records (received_at);
CREATE INDEX IF NOT EXISTS producer_dlq_records_tenant ON producer_dlq_records (tenant_id, id);
