-- Each subscription counts its jobs in flight. The claim reads the count
-- from the subscription row it locks (FOR UPDATE returns the latest
-- version), so one statement can claim without racing past
-- max_in_flight; claims add to it, and completions, releases and lease
-- recoveries subtract, each under the same row lock. Maintenance
-- reconciles it with the jobs table should it ever drift.
ALTER TABLE subscriptions ADD COLUMN in_flight integer NOT NULL DEFAULT 0;
UPDATE subscriptions s SET in_flight = (
    SELECT count(*) FROM delivery_jobs j WHERE j.subscription_id = s.id AND j.status = 'in_flight');

-- Subscription rows are rewritten on every claim and completion. Give each
-- row most of a page of its own, so those updates stay HOT (no index
-- writes) and pages can be pruned between them, instead of the table and
-- its indexes bloating under the churn.
ALTER TABLE subscriptions SET (fillfactor = 10);

-- A queue table: vacuum it often, so index entries of jobs that moved on are
-- reclaimed before scans pay for them.
ALTER TABLE delivery_jobs SET (
    autovacuum_vacuum_scale_factor = 0.01,
    autovacuum_vacuum_insert_scale_factor = 0.01,
    autovacuum_analyze_scale_factor = 0.02
);
