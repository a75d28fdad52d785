-- Time partitions (docs/operations.md) are PostgreSQL's (its 019 partitions events,
-- delivery_jobs and delivery_attempts by week). SQLite has no table
-- partitioning and keeps row deletion for retention: a no-op here, so both
-- drivers count the same versions.
SELECT 1;
