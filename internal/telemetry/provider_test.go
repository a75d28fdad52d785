package telemetry

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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
}

func (c *grpcCollector) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.ResourceSpans {
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

func TestNew_ExportsOverGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	col := &grpcCollector{}
	collectorpb.RegisterTraceServiceServer(srv, col)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)

	exportOne(t, Config{Endpoint: "http://" + ln.Addr().String(), Protocol: ProtocolGRPC})
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
