-- Heartbeats (docs/delivery.md, "Crashes"): each delivering process keeps
-- a row here, renewed about every second at the database's clock. The jobs
-- it leased (delivery_jobs.leased_by, set by claims and births) are its own
-- while its row is fresh; when the row lapses another process deletes it
-- and takes all those jobs over at once, instead of waiting for each job's
-- own lease to end. Jobs without a process (leased before this migration)
-- keep ending with their lease_expires_at.
CREATE TABLE IF NOT EXISTS dispatchers (
	id           text PRIMARY KEY,
	heartbeat_at timestamptz NOT NULL,
	started_at   timestamptz NOT NULL
);

-- Set with the lease and cleared with it: no index of its own (the
-- in-flight jobs are found through delivery_jobs_in_flight).
ALTER TABLE delivery_jobs ADD COLUMN IF NOT EXISTS leased_by text;
