-- Retention keeps an event while a job may still send it: one not yet
-- completed (pending, in flight) or a dead letter (a replay sends it
-- again). The index answers "does any such job need this event?" for each
-- event past retention.
--
-- Its predicate is written on completed_at, not as status IN ('pending',
-- ...), on purpose: a claim's "status = 'pending'" must not imply it, or
-- the planner may scan this index (every live job) for each subscription
-- instead of delivery_jobs_pending (that subscription's waiting jobs) when
-- its statistics say both are empty — and degrade by the backlog's size
-- exactly when a backlog builds up.
DROP INDEX delivery_jobs_live_event;
CREATE INDEX delivery_jobs_event_needed ON delivery_jobs (tenant_id, event_sequence)
    WHERE completed_at IS NULL OR status = 'dead_lettered';
