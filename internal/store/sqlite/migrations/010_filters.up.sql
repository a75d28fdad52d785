-- A subscription's filters (docs/filters-and-transforms.md): the CloudEvents Subscriptions API
-- expressions as JSON, all of which must hold for an event to match.
-- NULL: none.
ALTER TABLE subscriptions ADD COLUMN filters TEXT;
