-- A subscription's filters (SPEC 22): the CloudEvents Subscriptions API
-- expressions as JSON, all of which must hold for an event to match.
-- NULL: none.
ALTER TABLE subscriptions ADD COLUMN filters TEXT;
