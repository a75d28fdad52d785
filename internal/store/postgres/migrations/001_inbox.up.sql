-- The roster, the event inbox and the rejected records.

CREATE TABLE tenants (
    id            text PRIMARY KEY,
    name          text NOT NULL,
    status        text NOT NULL CHECK (status IN ('active', 'inactive')),
    -- The last arrival sequence given to this tenant's events. Ingest locks
    -- the row while it assigns sequences, so a tenant's sequences commit in
    -- order and a reader paging by sequence never skips a late commit.
    last_sequence bigint NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);

CREATE TABLE events (
    tenant_id         text NOT NULL,
    sequence          bigint NOT NULL,
    ce_id             text NOT NULL,
    spec_version      text NOT NULL,
    ce_type           text NOT NULL,
    event_type        text NOT NULL,
    source            text NOT NULL,
    subject           text NOT NULL DEFAULT '',
    time              text NOT NULL, -- ce-time exactly as received
    schema_version    text NOT NULL,
    schema_major      integer NOT NULL,
    data_content_type text NOT NULL,
    data_schema       text NOT NULL DEFAULT '',
    extensions        jsonb,
    data              bytea NOT NULL,
    topic             text NOT NULL,
    kafka_partition   integer NOT NULL,
    kafka_offset      bigint NOT NULL,
    received_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, sequence),
    UNIQUE (tenant_id, ce_id)
);

CREATE INDEX events_received_at ON events (received_at);

CREATE TABLE rejected_records (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic           text NOT NULL,
    kafka_partition integer NOT NULL,
    kafka_offset    bigint NOT NULL,
    ce_id           text NOT NULL DEFAULT '',
    headers         jsonb NOT NULL,
    reason          text NOT NULL,
    rejected_at     timestamptz NOT NULL
);
