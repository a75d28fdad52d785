-- Backfill (docs/backfill.md): a subscription may ask for the retained events of its
-- tenant it matches from a time on, delivered before its new events.
--
-- One row per subscription that asked. The window is the events received
-- at or after since with an arrival sequence up to until_sequence: the
-- tenant's last sequence when the backfill started (the subscription was
-- found active; every later event gets its job from matching). It is
-- walked in arrival order, a bounded chunk per transaction; cursor_sequence
-- is the last sequence walked.
CREATE TABLE subscription_backfills (
    subscription_id text PRIMARY KEY REFERENCES subscriptions (id),
    tenant_id       text NOT NULL,
    since           timestamptz NOT NULL,
    state           text NOT NULL CHECK (state IN ('running', 'done')),
    until_sequence  bigint NOT NULL DEFAULT 0,
    cursor_sequence bigint NOT NULL DEFAULT 0,
    matched         bigint NOT NULL DEFAULT 0,
    queued          bigint NOT NULL DEFAULT 0,
    skipped         bigint NOT NULL DEFAULT 0,
    started_at      timestamptz,
    finished_at     timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
-- The running backfills, the least recently advanced first.
CREATE INDEX subscription_backfills_running ON subscription_backfills (updated_at) WHERE state = 'running';

-- While a backfill runs, claims take none of the subscription's jobs of an
-- arrival sequence above backfill_hold (the backfill's cursor): the newer
-- events' jobs wait until every older event of the window has its job, so
-- none overtakes it. NULL: no hold.
ALTER TABLE subscriptions ADD COLUMN backfill_hold bigint;

-- "Does this event already have a job for this subscription?" — asked for
-- every event a backfill matches, whatever the job's state.
CREATE INDEX delivery_jobs_subscription_event ON delivery_jobs (subscription_id, event_sequence);
