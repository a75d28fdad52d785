-- Retention keeps an event while a job may still send it: pending, in
-- flight, or dead-lettered (a replay sends it again). The index answers
-- "does any such job need this event?" for each event past retention.
DROP INDEX delivery_jobs_live_event;
CREATE INDEX delivery_jobs_event_needed ON delivery_jobs (tenant_id, event_sequence)
    WHERE status IN ('pending', 'in_flight', 'dead_lettered');
