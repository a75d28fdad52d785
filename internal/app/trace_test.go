package app_test

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/devhub"
	"github.com/lerianstudio/streaming-hub/internal/telemetry"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// otlpReceiver is an OTLP/HTTP trace collector: it decodes each export
// with the OTLP protobuf definitions and keeps the spans.
type otlpReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	spans    []*tracepb.Span
	services []string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP export %s %s (%s)", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "not OTLP/HTTP protobuf", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var req collectorpb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Errorf("OTLP export does not decode: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.requests++
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					rc.services = append(rc.services, a.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// find returns the spans that match.
func (rc *otlpReceiver) find(match func(*tracepb.Span) bool) []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range rc.spans {
		if match(s) {
			out = append(out, s)
		}
	}
	return out
}

func (rc *otlpReceiver) exports() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.requests
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			if _, ok := a.Value.GetValue().(*commonpb.AnyValue_IntValue); ok {
				return fmt.Sprint(a.Value.GetIntValue())
			}
			return a.Value.GetStringValue()
		}
	}
	return ""
}

func startTraced(t *testing.T, d testkit.Driver, clock *testkit.Clock, tel telemetry.Config) *liveHub {
	t.Helper()
	env := map[string]string{"STREAMING_HUB_DISPATCH_IDLE_INTERVAL_MS": "20"}
	if d.Name == "postgres" {
		env["STREAMING_HUB_DATABASE_URL"] = testkit.PostgresURL(t)
	}
	h := devhub.Start(t, devhub.Options{Env: env, Now: clock.Now, Telemetry: tel})
	prod, err := kgo.NewClient(kgo.SeedBrokers(h.KafkaAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(prod.Close)
	return &liveHub{Hub: h, t: t, clock: clock, prod: prod}
}

const (
	producerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	producerSpan  = "00f067aa0ba902b7"
	producerTS    = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
)

// traceparentOf splits a traceparent header into trace id and span id.
func traceparentOf(t *testing.T, h string) (string, string) {
	t.Helper()
	if _, _, ok := telemetry.Incoming(h, ""); !ok {
		t.Fatalf("traceparent %q is not valid", h)
	}
	return h[3:35], h[36:52]
}

// A record produced with a traceparent: every attempt (two failures, then
// a success) is a CLIENT span whose parent is the producer's span, and the
// sink sees the producer's trace id with the attempt's own span id each
// time, and the tracestate unchanged. A record without one gets a trace at
// ingest: its attempts are children of the ingest batch's span. The pull
// answer shows the trace context; API requests are SERVER spans; no span
// carries the payload or a secret.
func TestTracing_AttemptsAreSpansOfTheProducersTrace(t *testing.T) {
	testkit.Long(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20") // export within milliseconds
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		otlp := newOTLPReceiver(t)
		clock := testkit.NewClock()
		l := startTraced(t, d, clock, telemetry.Config{Endpoint: otlp.URL, Protocol: telemetry.ProtocolHTTP, ServiceName: "hub-under-test"})
		sink := newRecorder(t)
		secret := destination.NewSecret()
		sub := l.subscribe("acme", sink.URL+"/hook?token=query-secret", secret, []string{"1m", "1m"})
		sink.setStatus(func(n int) int {
			if n <= 2 {
				return 500
			}
			return 200
		})

		traced := ceRecord("acme", "evt-traced", "")
		traced.Headers = append(traced.Headers,
			kgo.RecordHeader{Key: "traceparent", Value: []byte("00-" + producerTrace + "-" + producerSpan + "-01")},
			kgo.RecordHeader{Key: "tracestate", Value: []byte(producerTS)})
		l.produce(traced)
		for want := 1; want <= 3; want++ {
			testkit.WaitFor(t, fmt.Sprintf("attempt %d", want), func() bool { return sink.count() >= want })
			l.written(sub.ID, "evt-traced", want) // before the clock moves on: see TestEndToEnd_RetriesDeadLetterAndReplay
			clock.Advance(time.Minute)
		}

		// What the sink saw: one trace, a new span per attempt.
		spanOfAttempt := map[string]string{} // span id -> delivery id
		for i := range 3 {
			req, _ := sink.request(i)
			trace, span := traceparentOf(t, req.Header.Get("traceparent"))
			if trace != producerTrace {
				t.Errorf("attempt %d: trace id %s, want the producer's %s", i+1, trace, producerTrace)
			}
			if span == producerSpan || spanOfAttempt[span] != "" {
				t.Errorf("attempt %d: span id %s is not new", i+1, span)
			}
			spanOfAttempt[span] = req.Header.Get("X-Lerian-Delivery-Id")
			if got := req.Header.Get("tracestate"); got != producerTS {
				t.Errorf("attempt %d: tracestate %q, want %q unchanged", i+1, got, producerTS)
			}
		}

		// What the collector got: those three spans, children of the
		// producer's span, with the HTTP client conventions.
		var attempts []*tracepb.Span
		testkit.WaitFor(t, "three attempt spans exported", func() bool {
			attempts = otlp.find(func(s *tracepb.Span) bool {
				return s.Kind == tracepb.Span_SPAN_KIND_CLIENT && hex.EncodeToString(s.TraceId) == producerTrace
			})
			return len(attempts) == 3
		})
		statuses := map[string]int{}
		for _, s := range attempts {
			id := hex.EncodeToString(s.SpanId)
			if hex.EncodeToString(s.ParentSpanId) != producerSpan {
				t.Errorf("attempt span %s: parent %x, want the producer's span %s", id, s.ParentSpanId, producerSpan)
			}
			if spanOfAttempt[id] == "" {
				t.Errorf("attempt span %s was not the span of any request the sink saw (%v)", id, spanOfAttempt)
			}
			if attr(s, "streaming_hub.delivery_id") != spanOfAttempt[id] {
				t.Errorf("span %s: delivery id %q, the request's %q", id, attr(s, "streaming_hub.delivery_id"), spanOfAttempt[id])
			}
			for k, want := range map[string]string{
				"http.request.method":  "POST",
				"url.full":             sink.URL + "/hook",
				"server.address":       "127.0.0.1",
				"messaging.message.id": "evt-traced",
			} {
				if got := attr(s, k); got != want {
					t.Errorf("span %s: %s = %q, want %q", id, k, got, want)
				}
			}
			code := attr(s, "http.response.status_code")
			statuses[code]++
			if code == "500" && attr(s, "error.type") != "500" || code == "200" && attr(s, "error.type") != "" {
				t.Errorf("span %s: status %s, error.type %q", id, code, attr(s, "error.type"))
			}
		}
		if statuses["500"] != 2 || statuses["200"] != 1 {
			t.Errorf("attempt span statuses %v, want two 500s and one 200", statuses)
		}

		// A record without trace context: its trace starts at ingest, in
		// the batch's span.
		l.produce(ceRecord("acme", "evt-plain", ""))
		testkit.WaitFor(t, "the plain event's delivery", func() bool { return sink.count() == 4 })
		req, _ := sink.request(3)
		plainTrace, plainSpan := traceparentOf(t, req.Header.Get("traceparent"))
		if plainTrace == producerTrace {
			t.Fatal("an event without trace context joined another event's trace")
		}
		var batch, plain []*tracepb.Span
		testkit.WaitFor(t, "the ingest span and the attempt span of the plain event", func() bool {
			inTrace := func(kind tracepb.Span_SpanKind) func(*tracepb.Span) bool {
				return func(s *tracepb.Span) bool { return s.Kind == kind && hex.EncodeToString(s.TraceId) == plainTrace }
			}
			batch, plain = otlp.find(inTrace(tracepb.Span_SPAN_KIND_CONSUMER)), otlp.find(inTrace(tracepb.Span_SPAN_KIND_CLIENT))
			return len(batch) == 1 && len(plain) == 1
		})
		if hex.EncodeToString(plain[0].ParentSpanId) != hex.EncodeToString(batch[0].SpanId) || hex.EncodeToString(plain[0].SpanId) != plainSpan {
			t.Errorf("plain attempt span %x (parent %x); ingest span %x; header span %s", plain[0].SpanId, plain[0].ParentSpanId, batch[0].SpanId, plainSpan)
		}
		b := batch[0]
		if attr(b, "messaging.destination.name") != app.DevTopic || attr(b, "messaging.destination.partition.id") != "0" ||
			attr(b, "streaming_hub.records.accept") != "1" || attr(b, "streaming_hub.records.reject") != "0" {
			t.Errorf("ingest span attributes %v", b.Attributes)
		}

		// Pull shows the trace context; the API request is a SERVER span.
		var page struct {
			Data []struct {
				ID          string
				TraceParent string `json:"traceparent"`
				TraceState  string `json:"tracestate"`
			}
		}
		l.api("GET", "/v1/events", "acme", "", &page)
		if len(page.Data) != 2 || page.Data[0].TraceParent != "00-"+producerTrace+"-"+producerSpan+"-01" || page.Data[0].TraceState != producerTS ||
			!strings.Contains(page.Data[1].TraceParent, plainTrace) {
			t.Errorf("pull answer %+v", page.Data)
		}
		testkit.WaitFor(t, "the API request's span", func() bool {
			return len(otlp.find(func(s *tracepb.Span) bool {
				return s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "GET /v1/events" && attr(s, "http.route") == "/v1/events" &&
					attr(s, "http.response.status_code") == "200"
			})) == 1
		})

		// No span carries a payload or a secret.
		secrets := []string{`"amount":"10.00"`, "10.00", secret, "sink-token", "query-secret", l.Config.AdminToken}
		for _, s := range otlp.find(func(*tracepb.Span) bool { return true }) {
			for _, a := range s.Attributes {
				for _, bad := range secrets {
					if strings.Contains(a.Value.String(), bad) {
						t.Errorf("span %q attribute %s carries %q", s.Name, a.Key, bad)
					}
				}
			}
		}
		otlp.mu.Lock()
		if len(otlp.services) == 0 || otlp.services[0] != "hub-under-test" {
			t.Errorf("service.name %v, want OTEL_SERVICE_NAME's", otlp.services)
		}
		otlp.mu.Unlock()
	})
}

// With no endpoint set, nothing is exported (and no SDK runs at all), yet
// every attempt still sends traceparent: retries share the trace id and
// each has a new span id.
func TestTracing_WithoutAnEndpointNothingIsExported(t *testing.T) {
	testkit.Long(t)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "20")
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		otlp := newOTLPReceiver(t)
		// Checked after the hub's shutdown, which would flush any span.
		t.Cleanup(func() {
			if n := otlp.exports(); n != 0 {
				t.Errorf("%d OTLP exports without an endpoint", n)
			}
		})
		tel, err := telemetry.FromEnv(func(k string) string {
			return map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}[k]
		})
		if err != nil {
			t.Fatal(err)
		}
		clock := testkit.NewClock()
		l := startTraced(t, d, clock, tel)
		if l.Tracing.Tracer() != nil {
			t.Fatal("a tracer runs without an endpoint")
		}
		sink := newRecorder(t)
		sub := l.subscribe("acme", sink.URL, destination.NewSecret(), []string{"1m", "1m"})
		sink.setStatus(func(n int) int {
			if n <= 2 {
				return 503
			}
			return 200
		})
		for _, rec := range []*kgo.Record{ceRecord("acme", "evt-plain", "")} {
			l.produce(rec)
		}
		for want := 1; want <= 3; want++ {
			testkit.WaitFor(t, fmt.Sprintf("attempt %d", want), func() bool { return sink.count() >= want })
			l.written(sub.ID, "evt-plain", want)
			clock.Advance(time.Minute)
		}
		var trace0 string
		spans := map[string]bool{}
		for i := range 3 {
			req, _ := sink.request(i)
			trace, span := traceparentOf(t, req.Header.Get("traceparent"))
			if i == 0 {
				trace0 = trace
			}
			if trace != trace0 || spans[span] {
				t.Errorf("attempt %d: traceparent %s (first trace %s, spans so far %v)", i+1, req.Header.Get("traceparent"), trace0, spans)
			}
			spans[span] = true
			if req.Header.Get("tracestate") != "" {
				t.Errorf("attempt %d: tracestate %q for an event that had none", i+1, req.Header.Get("tracestate"))
			}
		}
	})
}
