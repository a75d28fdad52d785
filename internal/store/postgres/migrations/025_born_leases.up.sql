-- Jobs born leased (docs/architecture.md, "The commit protocol"): the
-- dispatcher that leased an ordered subscription's in-flight jobs, by claim
-- or at birth. Ingest appends a new job of an ordered subscription behind
-- them, leased to the same dispatcher, only when it is the one named here;
-- it means nothing while the subscription has nothing in flight.
ALTER TABLE subscriptions ADD COLUMN IF NOT EXISTS leased_by text;
