-- The web console (docs/console.md): sessions and portal links, stored so a session
-- survives a restart and works on every replica. Tokens are kept only as
-- their SHA-256 hashes.

CREATE TABLE console_sessions (
    token_hash   text PRIMARY KEY,
    tenant_id    text NOT NULL DEFAULT '',  -- '' is the admin
    key_id       text NOT NULL DEFAULT '',  -- the key signed in with; '' for the admin or a portal link
    csrf_secret  text NOT NULL,
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

CREATE TABLE portal_links (
    token_hash text PRIMARY KEY,
    tenant_id  text NOT NULL REFERENCES tenants (id),
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    revoked    boolean NOT NULL DEFAULT false
);
CREATE INDEX portal_links_expires ON portal_links (expires_at);
