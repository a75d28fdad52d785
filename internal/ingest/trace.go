package ingest

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/telemetry"
)

// traceBatch starts the span of a partition's batch when tracing is on, and
// gives every event that came without trace context one started here: the
// span's trace (or, with tracing off, a random one), so all attempts of
// such an event share a trace id. It returns nil when tracing is off.
func (c *Consumer) traceBatch(topic string, partition int32, records int, p *parsed) trace.Span {
	var span trace.Span
	var root trace.SpanContext
	if t := c.cfg.Tracer; t != nil {
		_, span = t.Start(context.Background(), "process "+topic,
			trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(
				semconv.MessagingSystemKafka,
				semconv.MessagingOperationTypeProcess,
				semconv.MessagingDestinationName(topic),
				semconv.MessagingDestinationPartitionID(strconv.Itoa(int(partition))),
				semconv.MessagingConsumerGroupName(c.cfg.Group),
				semconv.MessagingBatchMessageCount(records),
			))
		root = span.SpanContext()
	}
	var tp string
	for i := range p.Events {
		if p.Events[i].TraceParent != "" {
			continue
		}
		if tp == "" {
			if !root.IsValid() {
				root = telemetry.NewRoot()
			}
			tp = telemetry.TraceParent(root)
		}
		p.Events[i].TraceParent = tp
	}
	return span
}

// endBatch ends the batch's span with its records by verdict; err is why
// it was not persisted (the worker was told to stop while retrying).
func endBatch(span trace.Span, p parsed, res store.IngestResult, writes int, err error) {
	if span == nil {
		return
	}
	defer span.End()
	span.SetAttributes(attribute.Int("streaming_hub.inbox.writes", writes))
	if err != nil {
		span.SetStatus(codes.Error, "not persisted: the partition was revoked or the hub stopped")
		return
	}
	accepted, discarded := 0, p.systemEvents
	for _, o := range res.Outcomes {
		if o.Verdict == hub.Accept {
			accepted++
		} else {
			discarded++
		}
	}
	span.SetAttributes(
		attribute.Int("streaming_hub.records.accept", accepted),
		attribute.Int("streaming_hub.records.reject", len(p.Rejected)),
		attribute.Int("streaming_hub.records.discard", discarded),
	)
}
