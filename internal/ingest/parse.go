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
)

// DefaultMaxValueBytes bounds a record value unless configured otherwise.
const DefaultMaxValueBytes = 1 << 20

// Bounds of the wire contract (SPEC section 2).
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

// Parse applies the wire contract to one record. It returns the event to
// admit, or the reason the record is rejected (which names the header and
// the rule). It reads headers only; the value is carried, never parsed.
func Parse(r *kgo.Record, maxValueBytes int) (hub.Event, string) {
	if maxValueBytes <= 0 {
		maxValueBytes = DefaultMaxValueBytes
	}
	if len(r.Value) > maxValueBytes {
		return hub.Event{}, fmt.Sprintf("record value exceeds %d bytes", maxValueBytes)
	}
	h, reason := collect(r.Headers)
	if reason != "" {
		return hub.Event{}, reason
	}

	ev := hub.Event{
		Data:      r.Value,
		Topic:     r.Topic,
		Partition: r.Partition,
		Offset:    r.Offset,
	}
	var ok bool
	if ev.SpecVersion, reason = required(h, "ce-specversion"); reason != "" {
		return hub.Event{}, reason
	}
	if ev.SpecVersion != "1.0" {
		return hub.Event{}, "ce-specversion must be 1.0"
	}
	if ev.ID, reason = required(h, "ce-id"); reason != "" {
		return hub.Event{}, reason
	}
	if reason = text("ce-id", ev.ID, maxIDLen); reason != "" {
		return hub.Event{}, reason
	}
	if ev.Source, reason = required(h, "ce-source"); reason != "" {
		return hub.Event{}, reason
	}
	if reason = text("ce-source", ev.Source, maxSourceLen); reason != "" {
		return hub.Event{}, reason
	}
	if ev.Type, reason = required(h, "ce-type"); reason != "" {
		return hub.Event{}, reason
	}
	t, err := hub.ParseCEType(ev.Type)
	if err != nil {
		if len(ev.Type) > hub.MaxCETypeLen {
			return hub.Event{}, "ce-type must be at most 256 bytes"
		}
		return hub.Event{}, "ce-type must be studio.lerian.<resource>.<event> with segments [a-z0-9_-]+"
	}
	ev.EventType = t.EventType()
	if ev.Time, reason = required(h, "ce-time"); reason != "" {
		return hub.Event{}, reason
	}
	if _, err = time.Parse(time.RFC3339Nano, ev.Time); err != nil || len(ev.Time) > 64 {
		return hub.Event{}, "ce-time must be an RFC 3339 timestamp"
	}
	if ev.TenantID, reason = required(h, "ce-tenantid"); reason != "" {
		return hub.Event{}, reason
	}
	if hub.ValidateTenantID(ev.TenantID) != nil {
		return hub.Event{}, "ce-tenantid must be 1..256 bytes of [A-Za-z0-9._:-]"
	}
	if ev.SchemaVersion, reason = required(h, "ce-schemaversion"); reason != "" {
		return hub.Event{}, reason
	}
	m := semver.FindStringSubmatch(ev.SchemaVersion)
	if m == nil {
		return hub.Event{}, "ce-schemaversion must be a semantic version MAJOR.MINOR.PATCH"
	}
	if ev.SchemaMajor, err = strconv.Atoi(m[1]); err != nil || ev.SchemaMajor > 1<<30 {
		return hub.Event{}, "ce-schemaversion major is out of range"
	}

	if ev.Subject, ok = h["ce-subject"]; ok {
		if reason = text("ce-subject", ev.Subject, maxSubjectLen); reason != "" {
			return hub.Event{}, reason
		}
	}
	ct, hasCT := h["content-type"]
	dct, hasDCT := h["ce-datacontenttype"]
	switch {
	case hasCT && hasDCT && ct != dct:
		return hub.Event{}, "content-type and ce-datacontenttype disagree"
	case hasCT:
		ev.DataContentType = ct
	case hasDCT:
		ev.DataContentType = dct
	default:
		ev.DataContentType = hub.DefaultContentType
	}
	if reason = text("content type", ev.DataContentType, maxAttrLen); reason != "" {
		return hub.Event{}, reason
	}
	if ev.DataSchema, ok = h["ce-dataschema"]; ok {
		if reason = text("ce-dataschema", ev.DataSchema, maxAttrLen); reason != "" {
			return hub.Event{}, reason
		}
	}
	for k, v := range h {
		if !strings.HasPrefix(k, "ce-") || known[k] {
			continue
		}
		if reason = text(k, v, maxAttrLen); reason != "" {
			return hub.Event{}, "ce- extension " + reason
		}
		if ev.Extensions == nil {
			ev.Extensions = make(map[string]string)
		}
		ev.Extensions[k] = v
	}
	return ev, ""
}

// collect folds headers into a map with lower-case keys. A header repeated
// with the same value is harmless; with different values it is ambiguous and
// rejects the record.
func collect(hs []kgo.RecordHeader) (map[string]string, string) {
	h := make(map[string]string, len(hs))
	for _, rh := range hs {
		k := strings.ToLower(rh.Key)
		if strings.HasPrefix(k, "ce-") && !validName(k) {
			return nil, "header name " + strconv.Quote(store.CleanText(k, 64)) + " is not a valid ce- attribute name"
		}
		v := string(rh.Value)
		if prev, dup := h[k]; dup && prev != v {
			return nil, "duplicate " + k + " with different values"
		}
		h[k] = v
	}
	return h, ""
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
// (they would corrupt HTTP headers and logs downstream).
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

// validName: CloudEvents attribute names are lower-case alphanumerics.
func validName(k string) bool {
	name := k[len("ce-"):]
	if name == "" || len(name) > 64 {
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
