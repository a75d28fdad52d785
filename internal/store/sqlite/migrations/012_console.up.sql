-- The web console (docs/console.md): sessions and portal links, stored so a session
-- survives a restart and works on every replica. Tokens are kept only as
-- their SHA-256 hashes. Times are microseconds since the epoch.

CREATE TABLE console_sessions (
    token_hash   TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL DEFAULT '',  -- '' is the admin
    key_id       TEXT NOT NULL DEFAULT '',  -- the key signed in with; '' for the admin or a portal link
    csrf_secret  TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

CREATE TABLE portal_links (
    token_hash TEXT PRIMARY KEY,
    tenant_id  TEXT NOT NULL REFERENCES tenants (id),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked    INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX portal_links_expires ON portal_links (expires_at);
