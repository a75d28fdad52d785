-- API idempotency (docs/api.md): the answer of each POST made with an
-- Idempotency-Key, per principal and key. A row is 'running' while its
-- request runs (owned by token, expiring at a short lock), then
-- 'completed' with the answer's status and body (sealed under the KEK)
-- until created_at plus STREAMING_HUB_IDEMPOTENCY_TTL. Housekeeping reaps
-- expired rows; a claim takes over an expired row not yet reaped.
CREATE TABLE IF NOT EXISTS idempotency_keys (
	principal    text        NOT NULL,
	idem_key     text        NOT NULL,
	request_hash text        NOT NULL,
	token        text        NOT NULL,
	state        text        NOT NULL,
	status       integer     NOT NULL DEFAULT 0,
	body         bytea,
	created_at   timestamptz NOT NULL,
	expires_at   timestamptz NOT NULL,
	PRIMARY KEY (principal, idem_key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_expires ON idempotency_keys (expires_at);
