package dispatch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"strconv"
	"syscall"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/telemetry"
)

// traceAttempt gives an attempt its traceparent: the event's trace id and
// a span id of the attempt's own. With tracing on, that span is recorded:
// a CLIENT span, child of the event's trace context, with the HTTP client
// conventions; with it off, the span id is random and nothing else is
// made. The traceparent is "" for an event stored without trace context.
func (d *Dispatcher) traceAttempt(ctx context.Context, c store.Claimed, a *hub.Attempt) (context.Context, trace.Span, string) {
	t := d.cfg.Tracer
	if t == nil {
		return ctx, nil, telemetry.WithNewSpan(c.Event.TraceParent)
	}
	if sc, ok := telemetry.SpanContext(c.Event.TraceParent, c.Event.TraceState); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	name, attrs := "POST", append(urlAttributes(c.Subscription.Destination.URL), semconv.HTTPRequestMethodPost)
	if dest := c.Subscription.Destination; dest.Type != hub.DestinationWebhook {
		name, attrs = brokerSpan(dest)
	}
	ctx, span := t.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(append(attrs,
			semconv.MessagingMessageID(c.Event.ID),
			attribute.String("streaming_hub.tenant_id", c.Job.TenantID),
			attribute.String("streaming_hub.subscription_id", c.Job.SubscriptionID),
			attribute.String("streaming_hub.delivery_id", a.ID),
			attribute.Int("streaming_hub.attempt", c.Job.Attempts+1),
		)...))
	return ctx, span, telemetry.TraceParent(span.SpanContext())
}

// brokerSpan names the span of a publish to a broker destination and gives
// it the messaging conventions instead of HTTP's: "send <exchange or
// topic>", the system, the destination and the broker's host (never its
// credentials). The span stays a CLIENT span, as every attempt's is.
func brokerSpan(dest hub.Destination) (string, []attribute.KeyValue) {
	attrs := []attribute.KeyValue{semconv.MessagingOperationTypeSend, semconv.MessagingOperationName("send")}
	var where, host string
	switch dest.Type {
	case hub.DestinationRabbitMQ:
		attrs = append(attrs, semconv.MessagingSystemRabbitMQ)
		where = dest.Exchange
		if u, err := url.Parse(dest.URL); err == nil {
			host = u.Hostname()
		}
	case hub.DestinationNATS:
		attrs = append(attrs, semconv.MessagingSystemKey.String("nats"))
		where = dest.Subject
		if u, err := url.Parse(dest.URL); err == nil {
			host = u.Hostname()
		}
	case hub.DestinationPubSub:
		attrs = append(attrs, semconv.MessagingSystemGCPPubSub)
		where = dest.Topic
		host = "pubsub.googleapis.com"
	case hub.DestinationAWSSQS:
		attrs = append(attrs, semconv.MessagingSystemAWSSQS)
		where = dest.AWS.QueueURL
	case hub.DestinationAWSSNS:
		attrs = append(attrs, semconv.MessagingSystemAWSSNS)
		where = dest.AWS.TopicARN
	case hub.DestinationAWSEventBridge, hub.DestinationAWSKinesis:
		// No messaging system of their own in the conventions yet.
		attrs = append(attrs, semconv.MessagingSystemKey.String(dest.Type))
		where = dest.AWSResource()
	case hub.DestinationKafka:
		attrs = append(attrs, semconv.MessagingSystemKafka)
		where = dest.Topic
		if len(dest.Brokers) > 0 {
			if h, _, err := net.SplitHostPort(dest.Brokers[0]); err == nil {
				host = h
			}
		}
	}
	attrs = append(attrs, semconv.MessagingDestinationName(where))
	if host != "" {
		attrs = append(attrs, semconv.ServerAddress(host))
	}
	return "send " + where, attrs
}

// endAttempt ends an attempt's span with its outcome.
func endAttempt(span trace.Span, status int, err error) {
	if span == nil {
		return
	}
	if status > 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	}
	if err != nil {
		if status > 0 {
			span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		}
		span.SetStatus(codes.Error, err.Error()) // destination.Describe's words: no URL, no address
	}
	span.End()
}

// noteTransportError marks the attempt's span, if recorded, with the kind
// of error that kept the destination from answering.
func noteTransportError(ctx context.Context, err error) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(semconv.ErrorTypeKey.String(errorType(err)))
	}
}

// errorType is a low-cardinality name of a transport error (error.type).
func errorType(err error) string {
	var (
		refused *destination.RefusedError
		dns     *net.DNSError
		ne      net.Error
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		record  tls.RecordHeaderError
		alert   tls.AlertError
	)
	switch {
	case errors.As(err, &refused):
		return "private_address_refused"
	case errors.As(err, &dns):
		return "dns_error"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &unknown), errors.As(err, &host), errors.As(err, &invalid),
		errors.As(err, &verify), errors.As(err, &record), errors.As(err, &alert):
		return "tls_error"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection_reset"
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// urlAttributes are url.full without credentials, query or fragment (a
// query may carry a secret), server.address and server.port.
func urlAttributes(raw string) []attribute.KeyValue {
	u, err := url.Parse(raw)
	if err != nil {
		return nil
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	out := []attribute.KeyValue{semconv.URLFull(u.String()), semconv.ServerAddress(u.Hostname())}
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	if p, err := strconv.Atoi(port); err == nil {
		out = append(out, semconv.ServerPort(p))
	}
	return out
}
