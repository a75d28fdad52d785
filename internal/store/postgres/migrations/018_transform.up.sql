-- Transformations (docs/filters-and-transforms.md): a subscription's jq program, which turns each
-- event into the body sent. '' is none: the event's data goes unchanged.
-- A constant default adds the column without rewriting the table.
ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS transform text NOT NULL DEFAULT '';
