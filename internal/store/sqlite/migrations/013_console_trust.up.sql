-- Trust in the console (docs/security.md). A session records what opened it (kind:
-- admin, key, portal), the hash of the admin token it was opened with
-- (auth_hash), the portal link that opened it (link_id) and its absolute
-- end (ends_at, microseconds); its CSRF token is kept as a hash. The
-- sessions of before hold a clear CSRF secret and nothing to check them
-- by: they end here (everyone signs in again, once).
DELETE FROM console_sessions;
ALTER TABLE console_sessions RENAME COLUMN csrf_secret TO csrf_hash;
ALTER TABLE console_sessions ADD COLUMN kind TEXT NOT NULL DEFAULT '';
ALTER TABLE console_sessions ADD COLUMN auth_hash TEXT NOT NULL DEFAULT '';
ALTER TABLE console_sessions ADD COLUMN link_id TEXT NOT NULL DEFAULT '';
ALTER TABLE console_sessions ADD COLUMN ends_at INTEGER NOT NULL DEFAULT 0;
CREATE INDEX console_sessions_link ON console_sessions (link_id) WHERE link_id <> '';

-- Portal links are single-use (used_at) and listed and revoked by id. The
-- links of before get an id made of their hash.
ALTER TABLE portal_links ADD COLUMN id TEXT NOT NULL DEFAULT '';
UPDATE portal_links SET id = 'pl_' || substr(token_hash, 1, 32);
ALTER TABLE portal_links ADD COLUMN used_at INTEGER;
CREATE UNIQUE INDEX portal_links_id ON portal_links (id);
CREATE INDEX portal_links_tenant ON portal_links (tenant_id, id);
