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

-- Claiming: a subscription's due jobs in arrival order, and whether it has any.
CREATE INDEX delivery_jobs_pending ON delivery_jobs (subscription_id, event_sequence) WHERE status = 'pending';
CREATE INDEX delivery_jobs_due ON delivery_jobs (subscription_id, next_attempt_at) WHERE status = 'pending';
-- In-flight counts per subscription, and leases to recover.
CREATE INDEX delivery_jobs_in_flight ON delivery_jobs (subscription_id) WHERE status = 'in_flight';
CREATE INDEX delivery_jobs_leases ON delivery_jobs (lease_expires_at) WHERE status = 'in_flight';
-- The API: a subscription's deliveries, newest first.
CREATE INDEX delivery_jobs_subscription ON delivery_jobs (subscription_id, id);
-- Retention: terminal jobs by age.
CREATE INDEX delivery_jobs_completed ON delivery_jobs (status, completed_at) WHERE completed_at IS NOT NULL;
-- Retention of the inbox: is an event still needed by a job?
CREATE INDEX delivery_jobs_event ON delivery_jobs (tenant_id, event_sequence);

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
