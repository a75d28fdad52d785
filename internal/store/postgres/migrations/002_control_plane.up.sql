-- Tenant API keys and subscriptions.

CREATE TABLE api_keys (
    id         text PRIMARY KEY,
    tenant_id  text NOT NULL REFERENCES tenants (id),
    hash       bytea NOT NULL,  -- SHA-256 of the key's secret part
    created_at timestamptz NOT NULL
);

CREATE INDEX api_keys_tenant ON api_keys (tenant_id);

CREATE TABLE subscriptions (
    id                  text PRIMARY KEY,
    tenant_id           text NOT NULL REFERENCES tenants (id),
    name                text NOT NULL,
    event_types         jsonb NOT NULL,             -- [{"type","schema_major"}]
    destination_type    text NOT NULL,
    destination_url     text NOT NULL,
    destination_headers jsonb NOT NULL,
    auth_type           text NOT NULL DEFAULT '',
    auth_header_name    text NOT NULL DEFAULT '',
    secrets             bytea NOT NULL,             -- envelope-sealed signing secrets and credentials
    retry_schedule      jsonb,                      -- null: the default curve
    max_in_flight       integer NOT NULL,
    enabled             boolean NOT NULL,
    verification_state  text NOT NULL CHECK (verification_state IN ('pending', 'active', 'failed')),
    disabled_reason     text NOT NULL DEFAULT '',
    disabled_at         timestamptz,
    failure_first_at    timestamptz,
    failure_last_at     timestamptz,
    version             bigint NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    deleted_at          timestamptz
);

CREATE INDEX subscriptions_tenant ON subscriptions (tenant_id, id) WHERE deleted_at IS NULL;
