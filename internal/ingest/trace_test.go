package ingest

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	producerTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	producerTS = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"
)

func TestParse_TraceContext(t *testing.T) {
	hdr := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
	cases := []struct {
		name   string
		extra  []kgo.RecordHeader
		tp, ts string // what the event keeps
	}{
		{"none", nil, "", ""},
		{"traceparent and tracestate", []kgo.RecordHeader{hdr("traceparent", producerTP), hdr("tracestate", producerTS)}, producerTP, producerTS},
		{"header names are case-insensitive", []kgo.RecordHeader{hdr("Traceparent", producerTP)}, producerTP, ""},
		{"the CloudEvents extension", []kgo.RecordHeader{hdr("ce-traceparent", producerTP), hdr("ce-tracestate", producerTS)}, producerTP, producerTS},
		{"the Kafka header wins over the extension",
			[]kgo.RecordHeader{hdr("ce-traceparent", "00-11111111111111111111111111111111-2222222222222222-01"), hdr("traceparent", producerTP)},
			producerTP, ""},
		{"an invalid header falls back to the extension",
			[]kgo.RecordHeader{hdr("traceparent", "garbage"), hdr("ce-traceparent", producerTP)}, producerTP, ""},
		{"not sampled", []kgo.RecordHeader{hdr("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")},
			"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", ""},
		{"a later version is read as 00", []kgo.RecordHeader{hdr("traceparent", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes-next")},
			producerTP, ""},
		{"upper-case hex is invalid", []kgo.RecordHeader{hdr("traceparent", strings.ToUpper(producerTP))}, "", ""},
		{"all-zero trace id", []kgo.RecordHeader{hdr("traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01")}, "", ""},
		{"all-zero span id", []kgo.RecordHeader{hdr("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01")}, "", ""},
		{"version ff", []kgo.RecordHeader{hdr("traceparent", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")}, "", ""},
		{"version 00 with more", []kgo.RecordHeader{hdr("traceparent", producerTP+"-x")}, "", ""},
		{"short", []kgo.RecordHeader{hdr("traceparent", producerTP[:54])}, "", ""},
		{"non-hex", []kgo.RecordHeader{hdr("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01")}, "", ""},
		{"tracestate without a traceparent is dropped", []kgo.RecordHeader{hdr("tracestate", producerTS)}, "", ""},
		{"an invalid tracestate is dropped, the traceparent kept",
			[]kgo.RecordHeader{hdr("traceparent", producerTP), hdr("tracestate", "not a list member")}, producerTP, ""},
		{"a tracestate over 512 bytes is dropped",
			[]kgo.RecordHeader{hdr("traceparent", producerTP), hdr("tracestate", "a="+strings.Repeat("b", 511))}, producerTP, ""},
		{"conflicting traceparents are dropped",
			[]kgo.RecordHeader{hdr("traceparent", producerTP), hdr("traceparent", "00-11111111111111111111111111111111-2222222222222222-01")}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, reason := parseReason(record(validHeaders(), c.extra...), maxRecordBytes)
			if reason != "" {
				t.Fatalf("rejected: %s (an invalid trace context is ignored, never a rejection)", reason)
			}
			if ev.TraceParent != c.tp || ev.TraceState != c.ts {
				t.Errorf("trace context %q / %q, want %q / %q", ev.TraceParent, ev.TraceState, c.tp, c.ts)
			}
		})
	}
}

func TestParse_TraceExtensionTravelsOnUnchanged(t *testing.T) {
	ev, reason := parseReason(record(validHeaders(), kgo.RecordHeader{Key: "ce-traceparent", Value: []byte(producerTP)}), maxRecordBytes)
	if reason != "" {
		t.Fatal(reason)
	}
	if ev.Extensions["ce-traceparent"] != producerTP {
		t.Errorf("extensions %v: ce-traceparent is a CloudEvents extension and is sent on as ingested", ev.Extensions)
	}
}
