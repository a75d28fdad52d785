-- Shed holds (docs/delivery.md#ordering): when a breaker sheds a job of an
-- ordered subscription (max_in_flight 1) until some time, the subscription
-- is held until then, so no process (each has breakers of its own) claims
-- a later job of it first. NULL when not held; WakeJobs (a breaker that
-- closed, a passing verification) lifts it.
ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS held_until timestamptz;

-- When a process last found the subscription's destination healthy again
-- (its breaker closed, a verify passed): claims return it, and a process
-- whose own breaker for that destination opened before closes it.
ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS healed_at timestamptz;
