package ingest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/telemetry"
)

// Bounds of the wire contract (docs/wire-contract.md).
const (
	maxIDLen      = 256
	maxSourceLen  = 2048
	maxSubjectLen = 1024
	maxAttrLen    = 2048 // any other carried attribute
)

// known are the attributes the hub reads itself; every other ce- header is an
// extension carried through as is.
var known = map[string]bool{
	"ce-specversion": true, "ce-id": true, "ce-source": true, "ce-type": true,
	"ce-time": true, "ce-tenantid": true, "ce-schemaversion": true,
	"ce-subject": true, "ce-datacontenttype": true, "ce-dataschema": true,
}

var semver = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// Outcome is what the wire contract says of one record.
type Outcome struct {
	// Reason is why the record is rejected ("" when it is not): it names the
	// header and the rule, is valid UTF-8 without NUL and at most
	// MaxReasonBytes, whatever bytes the record carried.
	Reason string
	// Rule is Reason without what the producer wrote (header names): the
	// metric label, from a fixed, small set.
	Rule string
	// System marks a system event (ce-systemevent: true): addressed to no
	// tenant, discarded with reason system_event, never stored.
	System bool
	// Cause is the rejection's cause kind on the quarantine topic
	// (hub.CauseCodec, ...; docs/wire-contract.md#quarantine-on-kafka);
	// "" for a rejection is hub.CauseHandler.
	Cause string
}

// Bounds on what a producer controls (docs/wire-contract.md).
const (
	MaxReasonBytes     = 200
	maxExtensions      = 32
	maxExtensionBytes  = 8 << 10 // all extension values together
	maxAttrNameLen     = 20      // after "ce-"
	maxQuotedNameBytes = 64      // of a header name quoted in a reason
)

// ReservedTypePrefix starts the ce-types of the hub's own operational
// events; producers may not send them.
const ReservedTypePrefix = "studio.lerian.hub."

// reject is an Outcome whose reason is a fixed text: the reason is its own
// metric label.
// Its cause kind is codec: the envelope is broken.
func reject(reason string) Outcome {
	return Outcome{Reason: reason, Rule: reason, Cause: hub.CauseCodec}
}

// rejectDetail is an Outcome whose reason quotes the producer: the label is
// rule, the stored reason detail, made safe and bounded.
func rejectDetail(rule, detail string) Outcome {
	return Outcome{Reason: store.CleanText(detail, MaxReasonBytes), Rule: rule, Cause: hub.CauseCodec}
}

// because is out with another cause kind.
func (out Outcome) because(cause string) Outcome {
	out.Cause = cause
	return out
}

// Parse applies the wire contract to one record. It returns the event to
// admit, or the outcome that keeps it out (a rejection naming the header and
// the rule, or a system event to discard). It reads headers only; the value
// is carried, never parsed. maxValueBytes is STREAMING_HUB_MAX_RECORD_BYTES.
func Parse(r *kgo.Record, maxValueBytes int) (hub.Event, Outcome) {
	if len(r.Value) > maxValueBytes {
		// A well-formed envelope the hub's own limit refuses.
		return hub.Event{}, reject(fmt.Sprintf("record value exceeds %d bytes", maxValueBytes)).because(hub.CauseHandler)
	}
	h, out := collect(r.Headers)
	if out.Reason != "" {
		return hub.Event{}, out
	}

	ev := hub.Event{
		Data:      r.Value,
		Topic:     r.Topic,
		Partition: r.Partition,
		Offset:    r.Offset,
	}
	var ok bool
	var reason string
	if ev.SpecVersion, reason = required(h, "ce-specversion"); reason != "" {
		return hub.Event{}, reject(reason)
	}
	if ev.SpecVersion != "1.0" {
		return hub.Event{}, reject("ce-specversion must be 1.0")
	}
	if ev.ID, reason = required(h, "ce-id"); reason != "" {
		return hub.Event{}, reject(reason)
	}
	if reason = text("ce-id", ev.ID, maxIDLen); reason != "" {
		return hub.Event{}, reject(reason)
	}
	if ev.Source, reason = required(h, "ce-source"); reason != "" {
		return hub.Event{}, reject(reason)
	}
	if reason = text("ce-source", ev.Source, maxSourceLen); reason != "" {
		return hub.Event{}, reject(reason)
	}
	if ev.Type, reason = required(h, "ce-type"); reason != "" {
		return hub.Event{}, reject(reason)
	}
	t, err := hub.ParseCEType(ev.Type)
	if err != nil {
		if len(ev.Type) > hub.MaxCETypeLen {
			return hub.Event{}, reject("ce-type must be at most 256 bytes")
		}
		return hub.Event{}, reject("ce-type must be studio.lerian.<resource>.<event> with segments [a-z0-9_-]+")
	}
	if strings.HasPrefix(ev.Type, ReservedTypePrefix) {
		// Only the hub is that source.
		return hub.Event{}, reject("ce-type studio.lerian.hub.* is reserved for the hub's own events").because(hub.CauseSourceMismatch)
	}
	ev.EventType = t.EventType()
	if v, ok := h["ce-resourcetype"]; ok && v != t.Resource {
		return hub.Event{}, reject("ce-resourcetype must equal the <resource> of ce-type")
	}
	if v, ok := h["ce-eventtype"]; ok && v != t.Event {
		return hub.Event{}, reject("ce-eventtype must equal the <event> of ce-type")
	}
	if ev.Time, reason = required(h, "ce-time"); reason != "" {
		return hub.Event{}, reject(reason)
	}
	if _, err = time.Parse(time.RFC3339Nano, ev.Time); err != nil || len(ev.Time) > 64 {
		return hub.Event{}, reject("ce-time must be an RFC 3339 timestamp")
	}
	system := h["ce-systemevent"] == "true"
	if !system {
		if ev.TenantID, reason = required(h, "ce-tenantid"); reason != "" {
			return hub.Event{}, reject(reason)
		}
		if hub.ValidateTenantID(ev.TenantID) != nil {
			return hub.Event{}, reject("ce-tenantid must be 1..256 bytes of [A-Za-z0-9._:-]")
		}
	}
	if ev.SchemaVersion, reason = required(h, "ce-schemaversion"); reason != "" {
		return hub.Event{}, reject(reason)
	}
	m := semver.FindStringSubmatch(ev.SchemaVersion)
	if m == nil {
		return hub.Event{}, reject("ce-schemaversion must be a semantic version MAJOR.MINOR.PATCH")
	}
	if ev.SchemaMajor, err = strconv.Atoi(m[1]); err != nil || ev.SchemaMajor > 1<<30 {
		return hub.Event{}, reject("ce-schemaversion major is out of range")
	}

	if ev.Subject, ok = h["ce-subject"]; ok {
		if reason = text("ce-subject", ev.Subject, maxSubjectLen); reason != "" {
			return hub.Event{}, reject(reason)
		}
	}
	ct, hasCT := h["content-type"]
	dct, hasDCT := h["ce-datacontenttype"]
	switch {
	case hasCT && hasDCT && ct != dct:
		return hub.Event{}, reject("content-type and ce-datacontenttype disagree")
	case hasCT:
		ev.DataContentType = ct
	case hasDCT:
		ev.DataContentType = dct
	default:
		ev.DataContentType = hub.DefaultContentType
	}
	if reason = text("content type", ev.DataContentType, maxAttrLen); reason != "" {
		return hub.Event{}, reject(reason)
	}
	if ev.DataSchema, ok = h["ce-dataschema"]; ok {
		if reason = text("ce-dataschema", ev.DataSchema, maxAttrLen); reason != "" {
			return hub.Event{}, reject(reason)
		}
	}
	extBytes := 0
	for k, v := range h {
		if !strings.HasPrefix(k, "ce-") || known[k] {
			continue
		}
		if rule := text("", v, maxAttrLen); rule != "" {
			return hub.Event{}, rejectDetail("ce- extension"+rule, "ce- extension "+k+rule)
		}
		if ev.Extensions == nil {
			ev.Extensions = make(map[string]string)
		}
		ev.Extensions[k] = v
		extBytes += len(v)
	}
	if len(ev.Extensions) > maxExtensions {
		return hub.Event{}, reject(fmt.Sprintf("more than %d ce- extensions", maxExtensions))
	}
	if extBytes > maxExtensionBytes {
		return hub.Event{}, reject(fmt.Sprintf("ce- extension values exceed %d bytes in all", maxExtensionBytes))
	}
	if system {
		return hub.Event{}, Outcome{System: true}
	}
	ev.TraceParent, ev.TraceState = traceContext(h)
	return ev, Outcome{}
}

// traceContext is the record's W3C trace context: the traceparent and
// tracestate headers, else the CloudEvents distributed-tracing extension
// (ce-traceparent, ce-tracestate, which also travel on as extensions). An
// invalid one is ignored: the event gets a trace of its own at ingest.
func traceContext(h map[string]string) (string, string) {
	if tp, ts, ok := telemetry.Incoming(h["traceparent"], h["tracestate"]); ok {
		return tp, ts
	}
	if tp, ts, ok := telemetry.Incoming(h["ce-traceparent"], h["ce-tracestate"]); ok {
		return tp, ts
	}
	return "", ""
}

// read reports whether the hub reads a header: ce- attributes, the content
// type and the W3C trace context. Any other header is ignored, repeated or
// not.
func read(k string) bool {
	return strings.HasPrefix(k, "ce-") || k == "content-type" || k == "traceparent" || k == "tracestate"
}

// collect folds the headers the hub reads into a map with lower-case keys.
// A header repeated with the same value is harmless; with different values
// it is ambiguous and rejects the record, except the trace context, which
// is then dropped (the event gets a trace of its own).
func collect(hs []kgo.RecordHeader) (map[string]string, Outcome) {
	h := make(map[string]string, len(hs))
	var conflicting map[string]bool
	for _, rh := range hs {
		k := strings.ToLower(rh.Key)
		if !read(k) {
			continue
		}
		if strings.HasPrefix(k, "ce-") && !validName(k) {
			return nil, rejectDetail("invalid ce- attribute name",
				"header name "+strconv.Quote(store.CleanText(k, maxQuotedNameBytes))+" is not a valid ce- attribute name")
		}
		v := string(rh.Value)
		if prev, dup := h[k]; dup && prev != v {
			switch {
			case k == "traceparent" || k == "tracestate":
				if conflicting == nil {
					conflicting = map[string]bool{}
				}
				conflicting[k] = true
			case known[k] || k == "content-type":
				return nil, reject("duplicate " + k + " with different values")
			default:
				return nil, rejectDetail("duplicate ce- extension with different values", "duplicate "+k+" with different values")
			}
		}
		h[k] = v
	}
	if conflicting != nil {
		delete(h, "traceparent")
		delete(h, "tracestate")
	}
	return h, Outcome{}
}

func required(h map[string]string, k string) (string, string) {
	v, ok := h[k]
	if !ok {
		return "", "missing " + k
	}
	if v == "" {
		return "", "empty " + k
	}
	return v, ""
}

// text checks a carried string: bounded, valid UTF-8, no control characters
// (they would corrupt HTTP headers and logs downstream). With name "" the
// answer is the rule alone, starting with a space.
func text(name, v string, max int) string {
	if len(v) > max {
		return fmt.Sprintf("%s must be at most %d bytes", name, max)
	}
	if !utf8.ValidString(v) {
		return name + " must be valid UTF-8"
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return name + " must not contain control characters"
		}
	}
	return ""
}

// validName: CloudEvents attribute names are 1..20 lower-case alphanumerics.
func validName(k string) bool {
	name := k[len("ce-"):]
	if name == "" || len(name) > maxAttrNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
