-- PostgreSQL's 004 gives each subscription a count of its jobs in flight,
-- which its concurrent claimers read under the subscription's row lock.
-- SQLite has one writer: a claim counts a subscription's in-flight jobs
-- through delivery_jobs_in_flight and nothing can change them meanwhile,
-- so there is no counter to keep and none is added. The step is here so
-- that a version means the same change in both drivers.
SELECT 1;
