-- Replay marks (docs/delivery.md): a replayed job keeps when it was last replayed,
-- who asked (the API's principal: "admin", an API key's id, an
-- access-manager subject) and the fresh job it made. NULL when it never
-- was, and for jobs replayed before (whose replayed flag, 003, still keeps
-- bulk replays from sending them twice). delivery_jobs is a partitioned
-- parent (019): the columns reach every partition, and nullable columns
-- without a default rewrite none.
ALTER TABLE delivery_jobs ADD COLUMN IF NOT EXISTS replayed_at timestamptz;
ALTER TABLE delivery_jobs ADD COLUMN IF NOT EXISTS replayed_by text;
ALTER TABLE delivery_jobs ADD COLUMN IF NOT EXISTS replayed_as text;

-- A console session opened with an access-manager JWT keeps the token's
-- subject: its replays are marked as that subject's.
ALTER TABLE console_sessions ADD COLUMN IF NOT EXISTS subject text NOT NULL DEFAULT '';
