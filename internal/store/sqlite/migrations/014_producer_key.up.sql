-- The producer key whose signature verified each event (docs/lerian-platform.md,
-- ce-sigkid); '' for unsigned events and those stored before.
ALTER TABLE events ADD COLUMN producer_key_id TEXT NOT NULL DEFAULT '';
