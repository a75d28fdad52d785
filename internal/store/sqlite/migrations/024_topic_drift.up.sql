-- What the topic-drift check last found (docs/operations.md#topic-drift):
-- one row per difference, so each change is reported once, whichever
-- replica runs the check.
CREATE TABLE topic_drift (
    topic       TEXT    NOT NULL,
    kind        TEXT    NOT NULL,
    detected_at INTEGER NOT NULL,
    PRIMARY KEY (topic, kind)
);
