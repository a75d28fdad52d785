-- Each event's W3C trace context (docs/operations.md#tracing): the producer's
-- traceparent / tracestate, or the trace started at ingest. Events stored
-- before have none (''). A constant default adds no rewrite of the table.
ALTER TABLE events
    ADD COLUMN trace_parent text NOT NULL DEFAULT '',
    ADD COLUMN trace_state  text NOT NULL DEFAULT '';
