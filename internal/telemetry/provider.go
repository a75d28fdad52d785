package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// ScopeName names the hub's tracer (the instrumentation scope of its spans).
const ScopeName = "github.com/lerianstudio/streaming-hub"

// Provider is the process's tracing. Without an endpoint it is off: Tracer
// is nil, so instrumented code skips its spans entirely and costs nothing.
type Provider struct {
	sdk    *sdktrace.TracerProvider
	tracer trace.Tracer
}

// New starts tracing as c says; version is service.version. The exporter
// does not connect here: an unreachable collector delays nothing, its
// errors go to logger.
func New(ctx context.Context, c Config, version string, logger *slog.Logger) (*Provider, error) {
	if !c.Enabled() {
		return &Provider{}, nil
	}
	exp, err := newExporter(ctx, c)
	if err != nil {
		return nil, err
	}
	opts := []resource.Option{
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithAttributes(semconv.ServiceName(config.DefaultOTELServiceName), semconv.ServiceVersion(version)),
	}
	if c.EnvName != "" {
		opts = append(opts, resource.WithAttributes(semconv.DeploymentEnvironmentNameKey.String(c.EnvName),
			attribute.String("deployment.environment", c.EnvName))) // its name before semconv 1.27
	}
	opts = append(opts, resource.WithFromEnv()) // OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME win
	if c.ServiceName != "" {
		opts = append(opts, resource.WithAttributes(semconv.ServiceName(c.ServiceName)))
	}
	res, err := resource.New(ctx, opts...)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, errors.Join(err, exp.Shutdown(ctx))
	}
	if logger != nil {
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			logger.Warn("opentelemetry", "err", err)
		}))
	}
	// The sampler comes from OTEL_TRACES_SAMPLER and _ARG (default
	// parentbased_always_on), the batching from OTEL_BSP_*.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Provider{sdk: tp, tracer: tp.Tracer(ScopeName)}, nil
}

// Tracer is the hub's tracer, nil when tracing is off.
func (p *Provider) Tracer() trace.Tracer {
	if p == nil {
		return nil
	}
	return p.tracer
}

// Shutdown flushes the spans not yet exported and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil || p.sdk == nil {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// newExporter makes the OTLP exporter of c. The endpoint is passed
// explicitly, with the specification's rules: the traces endpoint as is,
// the generic one with /v1/traces appended for HTTP; a URL's scheme says
// whether to use TLS.
func newExporter(ctx context.Context, c Config) (*otlptrace.Exporter, error) {
	endpoint, signal := c.Endpoint, false
	if c.TracesEndpoint != "" {
		endpoint, signal = c.TracesEndpoint, true
	}
	if c.Protocol == ProtocolGRPC {
		if strings.Contains(endpoint, "://") {
			return otlptracegrpc.New(ctx, otlptracegrpc.WithEndpointURL(endpoint))
		}
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(endpoint)}
		if c.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		name := "OTEL_EXPORTER_OTLP_ENDPOINT"
		if signal {
			name = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
		}
		return nil, errors.New(name + ": must be a URL such as http://collector:4318")
	}
	if !signal {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
}
