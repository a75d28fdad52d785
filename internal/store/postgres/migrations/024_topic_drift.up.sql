-- What the topic-drift check last found (docs/operations.md#topic-drift):
-- one row per difference, so each change is reported once, whichever
-- replica runs the check.
CREATE TABLE IF NOT EXISTS topic_drift (
    topic       text        NOT NULL,
    kind        text        NOT NULL,
    detected_at timestamptz NOT NULL,
    PRIMARY KEY (topic, kind)
);
