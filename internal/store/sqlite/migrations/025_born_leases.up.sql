-- Jobs born leased (docs/architecture.md, "The commit protocol"): the
-- dispatcher that leased an ordered subscription's in-flight jobs, by claim
-- or at birth; it means nothing while the subscription has nothing in
-- flight.
ALTER TABLE subscriptions ADD COLUMN leased_by TEXT;
