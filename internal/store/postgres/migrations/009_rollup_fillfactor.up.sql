-- Health rollups are updated in place by every completion batch: leave room
-- on each page so those updates stay HOT (no index writes).
ALTER TABLE subscription_rollups SET (fillfactor = 50);
