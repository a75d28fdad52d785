-- A subscription's filters (docs/filters-and-transforms.md): the CloudEvents Subscriptions API
-- expressions, all of which must hold for an event to match. NULL: none.
-- A nullable column without default adds no rewrite of the table.
ALTER TABLE subscriptions ADD COLUMN filters jsonb;
