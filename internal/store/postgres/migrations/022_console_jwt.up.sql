-- A console session opened with an access-manager JWT keeps the token,
-- sealed by the console under a key only the session's cookie derives (the
-- database alone cannot open it), so that every page and form of the
-- session is authorized by the access manager again
-- (docs/lerian-platform.md#lerians-access-manager). Sessions opened
-- before kept only the token's hash: they end, and their users sign in
-- again.
ALTER TABLE console_sessions ADD COLUMN IF NOT EXISTS sealed_auth bytea NOT NULL DEFAULT ''::bytea;
DELETE FROM console_sessions WHERE kind = 'jwt';
