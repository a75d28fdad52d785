-- Each event's W3C trace context (docs/operations.md#tracing): the producer's
-- traceparent / tracestate, or the trace started at ingest. Events stored
-- before have none ('').
ALTER TABLE events ADD COLUMN trace_parent TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN trace_state TEXT NOT NULL DEFAULT '';
