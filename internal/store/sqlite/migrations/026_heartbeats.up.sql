-- Heartbeats (docs/delivery.md, "Crashes"): the delivering process's row,
-- renewed about every second; the jobs it leased (delivery_jobs.leased_by)
-- are its own while the row is fresh. SQLite serves one process, so a
-- lapsed row means the process stopped without saying so (a crash) and its
-- jobs are taken over by its next start.
CREATE TABLE dispatchers (
    id           TEXT PRIMARY KEY,
    heartbeat_at INTEGER NOT NULL,
    started_at   INTEGER NOT NULL
);

ALTER TABLE delivery_jobs ADD COLUMN leased_by TEXT;
