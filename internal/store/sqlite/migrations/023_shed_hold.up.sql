-- Shed holds (docs/delivery.md#ordering): when a breaker sheds a job of an
-- ordered subscription (max_in_flight 1) until some time (unix
-- microseconds), the subscription is held until then, so no claim takes a
-- later job of it first. NULL when not held; WakeJobs lifts it.
ALTER TABLE subscriptions ADD COLUMN held_until INTEGER;
