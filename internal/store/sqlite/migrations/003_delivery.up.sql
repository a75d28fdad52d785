-- Delivery jobs (one per matched event and subscription) and their attempts.

CREATE TABLE delivery_jobs (
    id                 TEXT PRIMARY KEY,
    tenant_id          TEXT NOT NULL,
    subscription_id    TEXT NOT NULL REFERENCES subscriptions (id),
    event_sequence     INTEGER NOT NULL,
    event_id           TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('pending', 'in_flight', 'succeeded', 'dead_lettered')),
    attempts           INTEGER NOT NULL DEFAULT 0,
    next_attempt_at    INTEGER NOT NULL,
    lease_token        TEXT,
    lease_expires_at   INTEGER,
    recoveries         INTEGER NOT NULL DEFAULT 0,
    dead_letter_reason TEXT NOT NULL DEFAULT '',
    last_error         TEXT NOT NULL DEFAULT '',
    replayed           INTEGER NOT NULL DEFAULT 0,
    enqueued_at        INTEGER NOT NULL,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    completed_at       INTEGER
) STRICT;

CREATE INDEX delivery_jobs_pending ON delivery_jobs (subscription_id, event_sequence) WHERE status = 'pending';
CREATE INDEX delivery_jobs_in_flight ON delivery_jobs (subscription_id) WHERE status = 'in_flight';
CREATE INDEX delivery_jobs_subscription ON delivery_jobs (subscription_id, id);
CREATE INDEX delivery_jobs_completed ON delivery_jobs (status, completed_at) WHERE completed_at IS NOT NULL;
CREATE INDEX delivery_jobs_live_event ON delivery_jobs (tenant_id, event_sequence) WHERE status IN ('pending', 'in_flight');

CREATE TABLE delivery_attempts (
    id            TEXT PRIMARY KEY,
    job_id        TEXT NOT NULL,
    started_at    INTEGER NOT NULL,
    duration_ms   INTEGER NOT NULL,
    status_code   INTEGER NOT NULL DEFAULT 0,
    error         TEXT NOT NULL DEFAULT '',
    response_body TEXT NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX delivery_attempts_job ON delivery_attempts (job_id, started_at);
