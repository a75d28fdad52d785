-- Delivery jobs (one per matched event and subscription) and their attempts.

CREATE TABLE delivery_jobs (
    id                 text PRIMARY KEY,
    tenant_id          text NOT NULL,
    subscription_id    text NOT NULL REFERENCES subscriptions (id),
    event_sequence     bigint NOT NULL,   -- with tenant_id, the event's key in events
    event_id           text NOT NULL,     -- the ce-id
    status             text NOT NULL CHECK (status IN ('pending', 'in_flight', 'succeeded', 'dead_lettered')),
    attempts           integer NOT NULL DEFAULT 0,
    next_attempt_at    timestamptz NOT NULL,
    lease_token        text,
    lease_expires_at   timestamptz,
    recoveries         integer NOT NULL DEFAULT 0,
    dead_letter_reason text NOT NULL DEFAULT '',
    last_error         text NOT NULL DEFAULT '',
    replayed           boolean NOT NULL DEFAULT false, -- a bulk replay already made a fresh job of it
    enqueued_at        timestamptz NOT NULL, -- the event's arrival, or the replay: latency starts here
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    completed_at       timestamptz
);

-- Every job changes state three times (pending, in flight, done) and each
-- change writes an entry in every index it qualifies for, so these are few
-- and mostly partial.
-- Claiming: a subscription's waiting jobs in arrival order (the due check
-- reads next_attempt_at on the way; the oldest is nearly always due).
CREATE INDEX delivery_jobs_pending ON delivery_jobs (subscription_id, event_sequence) WHERE status = 'pending';
-- In-flight jobs: per subscription, and the leases to recover (a small set).
CREATE INDEX delivery_jobs_in_flight ON delivery_jobs (subscription_id) WHERE status = 'in_flight';
-- The API: a subscription's deliveries, newest first.
CREATE INDEX delivery_jobs_subscription ON delivery_jobs (subscription_id, id);
-- Retention: terminal jobs by age.
CREATE INDEX delivery_jobs_completed ON delivery_jobs (status, completed_at) WHERE completed_at IS NOT NULL;
-- Retention of the inbox: events that live jobs still need.
CREATE INDEX delivery_jobs_live_event ON delivery_jobs (tenant_id, event_sequence) WHERE status IN ('pending', 'in_flight');

CREATE TABLE delivery_attempts (
    id            text PRIMARY KEY,  -- the X-Lerian-Delivery-Id
    job_id        text NOT NULL,
    started_at    timestamptz NOT NULL,
    duration_ms   integer NOT NULL,
    status_code   integer NOT NULL DEFAULT 0,
    error         text NOT NULL DEFAULT '',
    response_body text NOT NULL DEFAULT ''
);

CREATE INDEX delivery_attempts_job ON delivery_attempts (job_id, started_at);
