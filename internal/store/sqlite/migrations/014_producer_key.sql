-- The producer key whose signature verified each event (SPEC 27,
-- ce-sigkid); '' for unsigned events and those stored before.
ALTER TABLE events ADD COLUMN producer_key_id TEXT NOT NULL DEFAULT '';
