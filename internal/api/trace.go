package api

import (
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// withTracing records one SERVER span per request, a child of the caller's
// W3C trace context when it sends one. It carries the method, route, path
// and status; never a header, a query or a body (they hold tokens, keys
// and payloads).
func withTracing(tracer trace.Tracer, next http.Handler) http.Handler {
	var prop propagation.TraceContext
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		ctx, span := tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				semconv.HTTPRequestMethodKey.String(r.Method),
				semconv.URLPath(LoggedPath(r.URL.Path)),
				semconv.URLScheme(scheme),
			))
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		r = r.WithContext(ctx)
		defer func() {
			// The mux names the route on the request it served.
			if _, route, ok := strings.Cut(r.Pattern, " "); ok {
				span.SetName(r.Method + " " + route)
				span.SetAttributes(semconv.HTTPRoute(route))
			}
			span.SetAttributes(semconv.HTTPResponseStatusCode(rec.status))
			if rec.status >= 500 {
				span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(rec.status)))
				span.SetStatus(codes.Error, http.StatusText(rec.status))
			}
			span.End()
		}()
		next.ServeHTTP(rec, r)
	})
}
