-- The records of the producers' dead-letter topics (docs/lerian-platform.md): kept for
-- operators, never delivered, one row per (topic, partition, offset) so a
-- redelivered record is kept once; reaped after DLQ_RETENTION.
CREATE TABLE IF NOT EXISTS producer_dlq_records (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic            text NOT NULL,
    kafka_partition  integer NOT NULL,
    kafka_offset     bigint NOT NULL,
    source_topic     text NOT NULL DEFAULT '',
    source_partition integer,
    source_offset    bigint,
    payload_omitted  boolean NOT NULL DEFAULT false,
    ce_id            text NOT NULL DEFAULT '',
    tenant_id        text NOT NULL DEFAULT '',
    headers          jsonb NOT NULL,
    value_excerpt    text NOT NULL DEFAULT '',
    received_at      timestamptz NOT NULL,
    UNIQUE (topic, kafka_partition, kafka_offset)
);
CREATE INDEX IF NOT EXISTS producer_dlq_records_received ON producer_dlq_records (received_at);
CREATE INDEX IF NOT EXISTS producer_dlq_records_tenant ON producer_dlq_records (tenant_id, id);
