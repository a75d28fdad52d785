-- Backfill (docs/backfill.md): see the PostgreSQL migration of the same number.
CREATE TABLE subscription_backfills (
    subscription_id TEXT PRIMARY KEY REFERENCES subscriptions (id),
    tenant_id       TEXT NOT NULL,
    since           INTEGER NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('running', 'done')),
    until_sequence  INTEGER NOT NULL DEFAULT 0,
    cursor_sequence INTEGER NOT NULL DEFAULT 0,
    matched         INTEGER NOT NULL DEFAULT 0,
    queued          INTEGER NOT NULL DEFAULT 0,
    skipped         INTEGER NOT NULL DEFAULT 0,
    started_at      INTEGER,
    finished_at     INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX subscription_backfills_running ON subscription_backfills (updated_at) WHERE state = 'running';

ALTER TABLE subscriptions ADD COLUMN backfill_hold INTEGER;

CREATE INDEX delivery_jobs_subscription_event ON delivery_jobs (subscription_id, event_sequence);
