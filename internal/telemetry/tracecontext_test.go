package telemetry

import (
	"strings"
	"testing"
)

const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestWithNewSpan_KeepsTheTraceAndFlagsWithANewSpanEachTime(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		got := WithNewSpan(tp)
		if !strings.HasPrefix(got, tp[:36]) || !strings.HasSuffix(got, "-01") || len(got) != len(tp) {
			t.Fatalf("WithNewSpan(%s) = %s", tp, got)
		}
		if _, _, ok := Incoming(got, ""); !ok {
			t.Fatalf("%s is not a valid traceparent", got)
		}
		span := got[36:52]
		if span == tp[36:52] || seen[span] {
			t.Fatalf("span id %s reused", span)
		}
		seen[span] = true
	}
	if got := WithNewSpan(""); got != "" {
		t.Errorf("no trace context: %q", got)
	}
}

func TestNewRoot_IsAValidUnsampledTrace(t *testing.T) {
	got := TraceParent(NewRoot())
	if _, _, ok := Incoming(got, ""); !ok || !strings.HasSuffix(got, "-00") {
		t.Fatalf("NewRoot = %q", got)
	}
	if TraceParent(NewRoot()) == got {
		t.Fatal("two roots share a trace")
	}
}

func TestWithNewSpan_DoesNotAllocateBeyondTheHeader(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { WithNewSpan(tp) }); n > 1 {
		t.Errorf("%v allocations per attempt header, want at most the string itself", n)
	}
}

func TestFromEnv(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cases := []struct {
		name    string
		getenv  func(string) string
		enabled bool
		proto   string
		err     string
	}{
		{"nothing set", env(), false, "", ""},
		{"endpoint", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), true, ProtocolHTTP, ""},
		{"traces endpoint", env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/v1/traces"), true, ProtocolHTTP, ""},
		{"grpc", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), true, ProtocolGRPC, ""},
		{"the traces protocol wins", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"), true, ProtocolGRPC, ""},
		{"a bad protocol", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"), false, "",
			"OTEL_EXPORTER_OTLP_PROTOCOL: must be grpc or http/protobuf"},
		{"a bad http endpoint", env("OTEL_EXPORTER_OTLP_ENDPOINT", "c:4318"), false, "",
			"OTEL_EXPORTER_OTLP_ENDPOINT: must be an http"},
		{"SDK disabled", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_SDK_DISABLED", "true"), false, "", ""},
		{"exporter none", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318", "OTEL_TRACES_EXPORTER", "none"), false, "", ""},
		{"exporter console", env("OTEL_TRACES_EXPORTER", "console"), false, "", "OTEL_TRACES_EXPORTER"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := FromEnv(c.getenv)
			if c.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.err) {
					t.Fatalf("err %v, want %q...", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Enabled() != c.enabled || c.enabled && got.Protocol != c.proto {
				t.Errorf("got %+v, want enabled %v protocol %q", got, c.enabled, c.proto)
			}
		})
	}
}
