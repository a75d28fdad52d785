-- Tenant API keys and subscriptions.

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id),
    hash       BLOB NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

CREATE TABLE subscriptions (
    id                  TEXT PRIMARY KEY,
    tenant_id           TEXT NOT NULL REFERENCES tenants (id),
    name                TEXT NOT NULL,
    event_types         TEXT NOT NULL,
    destination_type    TEXT NOT NULL,
    destination_url     TEXT NOT NULL,
    destination_headers TEXT NOT NULL,
    auth_type           TEXT NOT NULL DEFAULT '',
    auth_header_name    TEXT NOT NULL DEFAULT '',
    secrets             BLOB NOT NULL,
    retry_schedule      TEXT,
    max_in_flight       INTEGER NOT NULL,
    enabled             INTEGER NOT NULL,
    verification_state  TEXT NOT NULL CHECK (verification_state IN ('pending', 'active', 'failed')),
    disabled_reason     TEXT NOT NULL DEFAULT '',
    disabled_at         INTEGER,
    failure_first_at    INTEGER,
    failure_last_at     INTEGER,
    version             INTEGER NOT NULL,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    deleted_at          INTEGER
) STRICT;

CREATE INDEX subscriptions_tenant ON subscriptions (tenant_id, id) WHERE deleted_at IS NULL;
