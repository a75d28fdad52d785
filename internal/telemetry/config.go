// Package telemetry is the hub's OpenTelemetry tracing: the W3C trace
// context of events, and the tracer provider that exports spans over OTLP
// when the standard OTEL_* variables name an endpoint.
package telemetry

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/lerianstudio/streaming-hub/internal/config"
)

// Protocols of the OTLP exporter.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// Config is what the OTEL_* variables say. The zero value exports nothing.
// The exporter's other settings (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// _CERTIFICATE, _COMPRESSION, ...), OTEL_RESOURCE_ATTRIBUTES and
// OTEL_TRACES_SAMPLER(_ARG) are read by the OpenTelemetry SDK itself.
type Config struct {
	// Endpoint is OTEL_EXPORTER_OTLP_ENDPOINT, the base URL of a collector
	// (/v1/traces is added for HTTP); TracesEndpoint is
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, used as is and first. With
	// neither, nothing is exported.
	Endpoint, TracesEndpoint string
	Protocol                 string // ProtocolGRPC or ProtocolHTTP
	// ServiceName is OTEL_SERVICE_NAME, else OTEL_RESOURCE_SERVICE_NAME
	// (lib-commons' name, which Lerian's chart sets); "" leaves
	// service.name to OTEL_RESOURCE_ATTRIBUTES, else
	// config.DefaultOTELServiceName.
	ServiceName string
	// EnvName is ENV_NAME, the deployment environment (Lerian's chart):
	// the resource attributes deployment.environment.name and, for
	// backends that still read it, deployment.environment.
	// OTEL_RESOURCE_ATTRIBUTES wins.
	EnvName string
	// Insecure is OTEL_INSECURE_EXPORTER=true, as lib-commons reads it: a
	// plaintext exporter for an endpoint without a scheme (gRPC's
	// host:port), like OTEL_EXPORTER_OTLP_INSECURE=true. An http://
	// endpoint is plaintext anyway; with an https:// one it is an error.
	Insecure bool
}

// Enabled reports whether spans are exported.
func (c Config) Enabled() bool { return c.Endpoint != "" || c.TracesEndpoint != "" }

// FromEnv reads the configuration from getenv (os.Getenv in production).
// OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn export off, as
// the OpenTelemetry specification says. A bad value is an error naming the
// variable.
func FromEnv(getenv func(string) string) (Config, error) {
	var c Config
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return c, nil
	}
	switch v := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); v {
	case "", "otlp":
	case "none":
		return c, nil
	default:
		return c, fmt.Errorf("OTEL_TRACES_EXPORTER: %q is not supported (otlp or none)", v)
	}
	c.Endpoint = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	c.TracesEndpoint = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	c.ServiceName = strings.TrimSpace(getenv("OTEL_SERVICE_NAME"))
	if c.ServiceName == "" {
		c.ServiceName = strings.TrimSpace(getenv("OTEL_RESOURCE_SERVICE_NAME"))
	}
	c.EnvName = strings.TrimSpace(getenv("ENV_NAME"))
	if v := strings.TrimSpace(getenv("OTEL_INSECURE_EXPORTER")); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return Config{}, fmt.Errorf("OTEL_INSECURE_EXPORTER: must be true or false, not %q", v)
		}
		c.Insecure = b
	}
	c.Protocol = config.DefaultOTLPProtocol
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			continue
		}
		if v != ProtocolGRPC && v != ProtocolHTTP {
			return Config{}, fmt.Errorf("%s: must be %s or %s, not %q", name, ProtocolGRPC, ProtocolHTTP, v)
		}
		c.Protocol = v
		break
	}
	if c.Protocol == ProtocolHTTP {
		for name, v := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.Endpoint, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": c.TracesEndpoint} {
			if u, err := url.Parse(v); v != "" && (err != nil || u.Host == "" || u.Scheme != "http" && u.Scheme != "https") {
				return Config{}, fmt.Errorf("%s: must be an http:// or https:// URL such as http://collector:4318", name) // the value may hold credentials: not repeated
			}
		}
	}
	if c.Insecure {
		for name, v := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.Endpoint, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": c.TracesEndpoint} {
			if strings.HasPrefix(strings.ToLower(v), "https://") {
				return Config{}, fmt.Errorf("OTEL_INSECURE_EXPORTER: true, but %s is an https:// URL: set one or the other (http:// is plaintext)", name)
			}
		}
	}
	return c, nil
}
