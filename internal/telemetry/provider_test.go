package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// grpcCollector is an OTLP/gRPC trace collector.
type grpcCollector struct {
	collectorpb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	names []string
	attrs map[string]string // the resource's string attributes
}

func (c *grpcCollector) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		if c.attrs == nil {
			c.attrs = map[string]string{}
		}
		for _, kv := range rs.GetResource().GetAttributes() {
			c.attrs[kv.Key] = kv.GetValue().GetStringValue()
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				c.names = append(c.names, s.Name)
			}
		}
	}
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

// exportOne records one span through a provider of c and shuts it down,
// which flushes it.
func exportOne(t *testing.T, c Config) {
	t.Helper()
	p, err := New(context.Background(), c, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.Tracer().Start(context.Background(), "one")
	span.End()
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// startGRPCCollector serves a plaintext OTLP/gRPC collector on loopback.
func startGRPCCollector(t *testing.T) (*grpcCollector, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	col := &grpcCollector{}
	collectorpb.RegisterTraceServiceServer(srv, col)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return col, ln.Addr().String()
}

func TestNew_ExportsOverGRPC(t *testing.T) {
	col, addr := startGRPCCollector(t)
	exportOne(t, Config{Endpoint: "http://" + addr, Protocol: ProtocolGRPC})
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.names) != 1 || col.names[0] != "one" {
		t.Fatalf("collector got spans %v, want [one]", col.names)
	}
}

// The generic endpoint is a base URL (/v1/traces is added); the traces
// endpoint is used as is.
func TestNew_ExportsOverHTTPToTheSpecifiedPath(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil || len(req.ResourceSpans) != 1 {
			t.Errorf("export %s does not decode: %v", r.URL.Path, err)
		}
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)

	exportOne(t, Config{Endpoint: srv.URL + "/otlp/", Protocol: ProtocolHTTP})
	exportOne(t, Config{Endpoint: srv.URL + "/ignored", TracesEndpoint: srv.URL + "/custom/traces", Protocol: ProtocolHTTP})
	mu.Lock()
	defer mu.Unlock()
	if len(paths) != 2 || paths[0] != "/otlp/v1/traces" || paths[1] != "/custom/traces" {
		t.Fatalf("exports went to %v, want [/otlp/v1/traces /custom/traces]", paths)
	}
}

func TestNew_WithoutAnEndpointHasNoTracer(t *testing.T) {
	p, err := New(context.Background(), Config{}, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tracer() != nil {
		t.Fatal("a tracer without an endpoint")
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Lerian's chart names the deployment environment ENV_NAME and the plaintext
// exporter OTEL_INSECURE_EXPORTER (lib-commons' names): a host:port
// endpoint is then reached without TLS, and the spans carry the
// environment; OTEL_RESOURCE_ATTRIBUTES still wins.
func TestNew_LerianEnvNameAndInsecureExporter(t *testing.T) {
	col, addr := startGRPCCollector(t)
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": addr, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_INSECURE_EXPORTER": "true", "ENV_NAME": "staging", "OTEL_RESOURCE_SERVICE_NAME": "hub-lab"}
	c, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	exportOne(t, c)
	col.mu.Lock()
	got, names := col.attrs, col.names
	col.attrs, col.names = nil, nil
	col.mu.Unlock()
	if len(names) != 1 {
		t.Fatalf("a host:port endpoint with OTEL_INSECURE_EXPORTER=true: the plaintext collector got %v", names)
	}
	if got["deployment.environment.name"] != "staging" || got["deployment.environment"] != "staging" || got["service.name"] != "hub-lab" {
		t.Fatalf("resource attributes %v", got)
	}

	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=prod-eu")
	exportOne(t, c)
	col.mu.Lock()
	defer col.mu.Unlock()
	if col.attrs["deployment.environment.name"] != "prod-eu" {
		t.Fatalf("OTEL_RESOURCE_ATTRIBUTES did not win over ENV_NAME: %v", col.attrs)
	}
}

func TestFromEnv_InsecureExporterProblems(t *testing.T) {
	for _, env := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4317", "OTEL_INSECURE_EXPORTER": "yes please"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318", "OTEL_INSECURE_EXPORTER": "true"},
	} {
		if _, err := FromEnv(func(k string) string { return env[k] }); err == nil || !strings.HasPrefix(err.Error(), "OTEL_INSECURE_EXPORTER: ") {
			t.Errorf("%v: %v", env, err)
		}
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318", "OTEL_INSECURE_EXPORTER": "false"}
	if c, err := FromEnv(func(k string) string { return env[k] }); err != nil || c.Insecure {
		t.Errorf("false: %+v, %v", c, err)
	}
}
