package telemetry

import (
	"encoding/hex"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"
)

// W3C Trace Context (https://www.w3.org/TR/trace-context/): the traceparent
// header is version-traceid-parentid-flags in lower-case hex; version 00 is
// exactly 55 characters.
const (
	traceParentLen = 55
	// MaxTraceStateBytes bounds a kept tracestate. W3C asks vendors to pass
	// on at least 512 characters; a longer one is dropped, not truncated,
	// so what is sent on is always what the producer wrote.
	MaxTraceStateBytes = 512
)

// Incoming validates a received trace context pair. It returns the
// traceparent in version 00 form and the tracestate when it is well formed,
// or ok false when traceparent is missing or invalid: an invalid trace
// context is ignored, never a reason to reject the record. A tracestate
// without a valid traceparent is meaningless and dropped with it.
func Incoming(traceparent, tracestate string) (tp, ts string, ok bool) {
	sc, ok := parse(traceparent)
	if !ok {
		return "", "", false
	}
	if tracestate != "" && len(tracestate) <= MaxTraceStateBytes {
		if _, err := trace.ParseTraceState(tracestate); err == nil {
			ts = tracestate
		}
	}
	return format(sc.TraceID(), sc.SpanID(), sc.TraceFlags()), ts, true
}

// SpanContext is the remote span context of a stored trace context, ok
// false when there is none.
func SpanContext(traceparent, tracestate string) (trace.SpanContext, bool) {
	sc, ok := parse(traceparent)
	if !ok {
		return trace.SpanContext{}, false
	}
	if tracestate != "" {
		if st, err := trace.ParseTraceState(tracestate); err == nil {
			sc = sc.WithTraceState(st)
		}
	}
	return sc, true
}

// TraceParent formats sc as a version 00 traceparent; "" when sc is not
// valid.
func TraceParent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return format(sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}

// WithNewSpan is traceparent with a new random span id: the header of one
// attempt when no span is recorded. It is "" when traceparent is not valid.
func WithNewSpan(traceparent string) string {
	if _, ok := parse(traceparent); !ok {
		return ""
	}
	// Stored trace context is in version 00 form: keep its trace id and
	// flags, write the new span id in place.
	var b [traceParentLen]byte
	copy(b[:], "00-")
	copy(b[3:36], traceparent[3:36])
	s := NewSpanID()
	hex.Encode(b[36:52], s[:])
	copy(b[52:], traceparent[52:55])
	return string(b[:])
}

// NewTraceID and NewSpanID are random, never all zeros. They are not
// secrets: math/rand is enough, as in the OpenTelemetry SDK.
func NewTraceID() trace.TraceID {
	var t trace.TraceID
	for !t.IsValid() {
		putUint64(t[:8], rand.Uint64())
		putUint64(t[8:], rand.Uint64())
	}
	return t
}

func NewSpanID() trace.SpanID {
	var s trace.SpanID
	for !s.IsValid() {
		putUint64(s[:], rand.Uint64())
	}
	return s
}

func putUint64(b []byte, v uint64) {
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
}

// NewRoot is a fresh trace context: a random trace id and span id, not
// sampled (nothing recorded it).
func NewRoot() trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: NewTraceID(), SpanID: NewSpanID()})
}

func format(t trace.TraceID, s trace.SpanID, f trace.TraceFlags) string {
	var b [traceParentLen]byte
	b[0], b[1], b[2] = '0', '0', '-'
	hex.Encode(b[3:35], t[:])
	b[35] = '-'
	hex.Encode(b[36:52], s[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(f)})
	return string(b[:])
}

// parse reads a traceparent by the W3C rules: lower-case hex, version ff
// invalid, trace and parent ids not all zeros; version 00 exactly 55
// characters, a later version at least that, followed by "-" if longer.
func parse(s string) (trace.SpanContext, bool) {
	if len(s) < traceParentLen || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return trace.SpanContext{}, false
	}
	var ver [1]byte
	if !lowerHex(s[0:2]) || decode(ver[:], s[0:2]) != nil || ver[0] == 0xff {
		return trace.SpanContext{}, false
	}
	if ver[0] == 0 && len(s) != traceParentLen || ver[0] != 0 && len(s) > traceParentLen && s[traceParentLen] != '-' {
		return trace.SpanContext{}, false
	}
	var t trace.TraceID
	var sp trace.SpanID
	var f [1]byte
	if !lowerHex(s[3:35]) || !lowerHex(s[36:52]) || !lowerHex(s[53:55]) ||
		decode(t[:], s[3:35]) != nil || decode(sp[:], s[36:52]) != nil || decode(f[:], s[53:55]) != nil {
		return trace.SpanContext{}, false
	}
	if !t.IsValid() || !sp.IsValid() {
		return trace.SpanContext{}, false
	}
	return trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: t, SpanID: sp, TraceFlags: trace.TraceFlags(f[0]), Remote: true,
	}), true
}

func decode(dst []byte, s string) error {
	_, err := hex.Decode(dst, []byte(s))
	return err
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
