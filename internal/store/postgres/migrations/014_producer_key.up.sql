-- The producer key whose signature verified each event (docs/lerian-platform.md,
-- ce-sigkid); '' for unsigned events and those stored before. A constant
-- default adds no rewrite of the table.
ALTER TABLE events ADD COLUMN producer_key_id text NOT NULL DEFAULT '';
