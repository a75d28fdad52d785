-- Replay marks (docs/delivery.md): a replayed job keeps when it was last replayed
-- (unix microseconds), who asked (the API's principal: "admin", an API
-- key's id, an access-manager subject) and the fresh job it made. NULL
-- when it never was, and for jobs replayed before (whose replayed flag,
-- 003, still keeps bulk replays from sending them twice).
ALTER TABLE delivery_jobs ADD COLUMN replayed_at INTEGER;
ALTER TABLE delivery_jobs ADD COLUMN replayed_by TEXT;
ALTER TABLE delivery_jobs ADD COLUMN replayed_as TEXT;

-- A console session opened with an access-manager JWT keeps the token's
-- subject: its replays are marked as that subject's.
ALTER TABLE console_sessions ADD COLUMN subject TEXT NOT NULL DEFAULT '';
