package ingest

import (
	"strings"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// validHeaders is a record every rule accepts; each case changes one thing.
func validHeaders() map[string]string {
	return map[string]string{
		"ce-specversion":   "1.0",
		"ce-id":            "evt-1",
		"ce-source":        "//midaz/ledger",
		"ce-type":          "studio.lerian.transaction.posted",
		"ce-time":          "2026-11-30T12:00:00Z",
		"ce-tenantid":      "acme",
		"ce-schemaversion": "1.4.2",
	}
}

func record(h map[string]string, extra ...kgo.RecordHeader) *kgo.Record {
	r := &kgo.Record{Topic: "lerian.streaming.ledger_transaction.posted", Partition: 1, Offset: 7, Value: []byte(`{"a":1}`)}
	for k, v := range h {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	r.Headers = append(r.Headers, extra...)
	return r
}

// parseReason is Parse with the rejection reason alone.
func parseReason(r *kgo.Record, maxValueBytes int) (hub.Event, string) {
	ev, out := Parse(r, maxValueBytes)
	return ev, out.Reason
}

func TestParse_Rules(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name   string
		set    map[string]string // headers to set ("" values are set empty)
		del    []string
		extra  []kgo.RecordHeader
		reason string // "" means accepted
	}{
		{name: "valid", reason: ""},

		{name: "specversion missing", del: []string{"ce-specversion"}, reason: "missing ce-specversion"},
		{name: "specversion empty", set: map[string]string{"ce-specversion": ""}, reason: "empty ce-specversion"},
		{name: "specversion 0.3", set: map[string]string{"ce-specversion": "0.3"}, reason: "ce-specversion must be 1.0"},
		{name: "specversion 1.0.0", set: map[string]string{"ce-specversion": "1.0.0"}, reason: "ce-specversion must be 1.0"},

		{name: "id missing", del: []string{"ce-id"}, reason: "missing ce-id"},
		{name: "id empty", set: map[string]string{"ce-id": ""}, reason: "empty ce-id"},
		{name: "id 256 bytes", set: map[string]string{"ce-id": long(256)}},
		{name: "id 257 bytes", set: map[string]string{"ce-id": long(257)}, reason: "ce-id must be at most 256 bytes"},
		{name: "id control char", set: map[string]string{"ce-id": "a\nb"}, reason: "ce-id must not contain control characters"},
		{name: "id NUL", set: map[string]string{"ce-id": "a\x00b"}, reason: "ce-id must not contain control characters"},
		{name: "id invalid utf-8", set: map[string]string{"ce-id": "a\xffb"}, reason: "ce-id must be valid UTF-8"},
		{name: "id unicode", set: map[string]string{"ce-id": "évènement-1"}},

		{name: "source missing", del: []string{"ce-source"}, reason: "missing ce-source"},
		{name: "source empty", set: map[string]string{"ce-source": ""}, reason: "empty ce-source"},
		{name: "source 2048 bytes", set: map[string]string{"ce-source": long(2048)}},
		{name: "source 2049 bytes", set: map[string]string{"ce-source": long(2049)}, reason: "ce-source must be at most 2048 bytes"},
		{name: "source control char", set: map[string]string{"ce-source": "a\tb"}, reason: "ce-source must not contain control characters"},

		{name: "type missing", del: []string{"ce-type"}, reason: "missing ce-type"},
		{name: "type empty", set: map[string]string{"ce-type": ""}, reason: "empty ce-type"},
		{name: "type five segments", set: map[string]string{"ce-type": "studio.lerian.ledger.balance.config-changed"}},
		{name: "type underscore and digits", set: map[string]string{"ce-type": "studio.lerian.tx_2.posted-v2"}},
		{name: "type three segments", set: map[string]string{"ce-type": "studio.lerian.transaction"}, reason: "ce-type must be studio.lerian.<resource>.<event> with segments [a-z0-9_-]+"},
		{name: "type six segments", set: map[string]string{"ce-type": "studio.lerian.a.b.c.d"}, reason: "ce-type must be studio.lerian.<resource>.<event> with segments [a-z0-9_-]+"},
		{name: "type wrong prefix", set: map[string]string{"ce-type": "com.example.transaction.posted"}, reason: "ce-type must be studio.lerian.<resource>.<event> with segments [a-z0-9_-]+"},
		{name: "type upper case", set: map[string]string{"ce-type": "studio.lerian.Transaction.posted"}, reason: "ce-type must be studio.lerian.<resource>.<event> with segments [a-z0-9_-]+"},
		{name: "type empty segment", set: map[string]string{"ce-type": "studio.lerian..posted"}, reason: "ce-type must be studio.lerian.<resource>.<event> with segments [a-z0-9_-]+"},
		{name: "type too long", set: map[string]string{"ce-type": "studio.lerian." + long(200) + "." + long(60)}, reason: "ce-type must be at most 256 bytes"},

		{name: "time missing", del: []string{"ce-time"}, reason: "missing ce-time"},
		{name: "time empty", set: map[string]string{"ce-time": ""}, reason: "empty ce-time"},
		{name: "time with offset and nanos", set: map[string]string{"ce-time": "2026-11-30T09:00:00.123456789-03:00"}},
		{name: "time not RFC 3339", set: map[string]string{"ce-time": "30/11/2026 12:00"}, reason: "ce-time must be an RFC 3339 timestamp"},
		{name: "time without zone", set: map[string]string{"ce-time": "2026-11-30T12:00:00"}, reason: "ce-time must be an RFC 3339 timestamp"},

		{name: "tenant missing", del: []string{"ce-tenantid"}, reason: "missing ce-tenantid"},
		{name: "tenant empty", set: map[string]string{"ce-tenantid": ""}, reason: "empty ce-tenantid"},
		{name: "tenant all allowed chars", set: map[string]string{"ce-tenantid": "Acme.co_1:eu-west"}},
		{name: "tenant 256 bytes", set: map[string]string{"ce-tenantid": long(256)}},
		{name: "tenant 257 bytes", set: map[string]string{"ce-tenantid": long(257)}, reason: "ce-tenantid must be 1..256 bytes of [A-Za-z0-9._:-]"},
		{name: "tenant slash", set: map[string]string{"ce-tenantid": "acme/eu"}, reason: "ce-tenantid must be 1..256 bytes of [A-Za-z0-9._:-]"},
		{name: "tenant space", set: map[string]string{"ce-tenantid": "acme corp"}, reason: "ce-tenantid must be 1..256 bytes of [A-Za-z0-9._:-]"},

		{name: "schemaversion missing", del: []string{"ce-schemaversion"}, reason: "missing ce-schemaversion"},
		{name: "schemaversion empty", set: map[string]string{"ce-schemaversion": ""}, reason: "empty ce-schemaversion"},
		{name: "schemaversion two parts", set: map[string]string{"ce-schemaversion": "1.0"}, reason: "ce-schemaversion must be a semantic version MAJOR.MINOR.PATCH"},
		{name: "schemaversion v prefix", set: map[string]string{"ce-schemaversion": "v1.0.0"}, reason: "ce-schemaversion must be a semantic version MAJOR.MINOR.PATCH"},
		{name: "schemaversion leading zero", set: map[string]string{"ce-schemaversion": "01.0.0"}, reason: "ce-schemaversion must be a semantic version MAJOR.MINOR.PATCH"},
		{name: "schemaversion prerelease", set: map[string]string{"ce-schemaversion": "1.0.0-rc1"}, reason: "ce-schemaversion must be a semantic version MAJOR.MINOR.PATCH"},
		{name: "schemaversion huge major", set: map[string]string{"ce-schemaversion": "99999999999999999999.0.0"}, reason: "ce-schemaversion major is out of range"},

		{name: "subject 1024 bytes", set: map[string]string{"ce-subject": long(1024)}},
		{name: "subject 1025 bytes", set: map[string]string{"ce-subject": long(1025)}, reason: "ce-subject must be at most 1024 bytes"},
		{name: "subject control char", set: map[string]string{"ce-subject": "a\rb"}, reason: "ce-subject must not contain control characters"},

		{name: "content types agree", set: map[string]string{"content-type": "application/xml", "ce-datacontenttype": "application/xml"}},
		{name: "content types disagree", set: map[string]string{"content-type": "application/xml", "ce-datacontenttype": "application/json"}, reason: "content-type and ce-datacontenttype disagree"},

		{name: "duplicate header same value", extra: []kgo.RecordHeader{{Key: "ce-id", Value: []byte("evt-1")}}},
		{name: "duplicate header different value", extra: []kgo.RecordHeader{{Key: "ce-id", Value: []byte("evt-2")}}, reason: "duplicate ce-id with different values"},
		{name: "duplicate header differing in case", extra: []kgo.RecordHeader{{Key: "CE-Tenantid", Value: []byte("other")}}, reason: "duplicate ce-tenantid with different values"},
		{name: "upper-case header names", extra: []kgo.RecordHeader{{Key: "CE-SUBJECT", Value: []byte("s")}}},
		{name: "bad extension name", extra: []kgo.RecordHeader{{Key: "ce-trace_parent", Value: []byte("x")}}, reason: `header name "ce-trace_parent" is not a valid ce- attribute name`},
		{name: "extension control char", extra: []kgo.RecordHeader{{Key: "ce-traceparent", Value: []byte("a\x01")}}, reason: "ce- extension ce-traceparent must not contain control characters"},
		{name: "non-ce headers ignored", extra: []kgo.RecordHeader{{Key: "x_trace", Value: []byte("\x00\xff")}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := validHeaders()
			for k, v := range c.set {
				h[k] = v
			}
			for _, k := range c.del {
				delete(h, k)
			}
			ev, out := Parse(record(h, c.extra...), maxRecordBytes)
			checkOutcome(t, out)
			if reason := out.Reason; reason != c.reason {
				t.Fatalf("reason = %q, want %q", reason, c.reason)
			}
			if out.Reason == "" && ev.ID == "" {
				t.Fatal("accepted record produced an empty event")
			}
		})
	}
}

// maxRecordBytes is the default STREAMING_HUB_MAX_RECORD_BYTES.
var maxRecordBytes = config.Defaults(config.Serve).Ingest.MaxRecordBytes

func TestParse_ValueSizeLimit(t *testing.T) {
	r := record(validHeaders())
	r.Value = make([]byte, 1<<20)
	if _, reason := parseReason(r, maxRecordBytes); reason != "" {
		t.Fatalf("1 MiB value rejected by default: %s", reason)
	}
	r.Value = make([]byte, 1<<20+1)
	if _, reason := parseReason(r, maxRecordBytes); reason != "record value exceeds 1048576 bytes" {
		t.Fatalf("1 MiB + 1 value: reason %q", reason)
	}
	r.Value = make([]byte, 11)
	if _, reason := parseReason(r, 10); reason != "record value exceeds 10 bytes" {
		t.Fatalf("configured limit: reason %q", reason)
	}
}

func TestParse_BuildsTheEventFromHeadersOnly(t *testing.T) {
	h := validHeaders()
	h["ce-type"] = "studio.lerian.ledger.balance.config-changed"
	h["ce-subject"] = "balance/42"
	h["ce-dataschema"] = "https://schemas.lerian.studio/balance/1"
	h["ce-resourcetype"] = "balance"
	h["ce-eventtype"] = "config-changed"
	h["content-type"] = "application/cloudevents+json; charset=utf-8"
	r := record(h, kgo.RecordHeader{Key: "traceparent", Value: []byte("not ce")})
	r.Key = []byte("some-other-tenant") // the key never decides tenancy
	r.Value = []byte("not even json")   // the payload is never parsed

	ev, reason := parseReason(r, maxRecordBytes)
	if reason != "" {
		t.Fatal(reason)
	}
	checks := map[string][2]string{
		"TenantID":        {ev.TenantID, "acme"},
		"ID":              {ev.ID, "evt-1"},
		"Type":            {ev.Type, "studio.lerian.ledger.balance.config-changed"},
		"EventType":       {ev.EventType, "balance.config-changed"},
		"Subject":         {ev.Subject, "balance/42"},
		"DataSchema":      {ev.DataSchema, "https://schemas.lerian.studio/balance/1"},
		"DataContentType": {ev.DataContentType, "application/cloudevents+json; charset=utf-8"},
		"Time":            {ev.Time, "2026-11-30T12:00:00Z"},
		"SchemaVersion":   {ev.SchemaVersion, "1.4.2"},
		"Data":            {string(ev.Data), "not even json"},
		"Topic":           {ev.Topic, "lerian.streaming.ledger_transaction.posted"},
		"ext resource":    {ev.Extensions["ce-resourcetype"], "balance"},
		"ext event":       {ev.Extensions["ce-eventtype"], "config-changed"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", name, c[0], c[1])
		}
	}
	if ev.SchemaMajor != 1 || ev.Partition != 1 || ev.Offset != 7 || len(ev.Extensions) != 2 {
		t.Errorf("major %d partition %d offset %d extensions %v", ev.SchemaMajor, ev.Partition, ev.Offset, ev.Extensions)
	}

	delete(h, "content-type")
	if ev, _ := parseReason(record(h), maxRecordBytes); ev.DataContentType != "application/json" {
		t.Errorf("default content type = %q", ev.DataContentType)
	}
	h["ce-datacontenttype"] = "text/plain"
	if ev, _ := parseReason(record(h), maxRecordBytes); ev.DataContentType != "text/plain" {
		t.Errorf("ce-datacontenttype alone = %q", ev.DataContentType)
	}
}

// A rejection is stored safe and bounded: ingest builds it, the store
// cleans it, once.
func TestRejection_KeepsSafeBoundedHeaders(t *testing.T) {
	r := record(map[string]string{"ce-id": "evt\x00-9", "ce-type": "bad"},
		kgo.RecordHeader{Key: "blob", Value: []byte(strings.Repeat("é", 2000) + "\xff")})
	rej := store.SafeRejection(rejection(r, "missing ce-specversion"))
	if rej.CEID != "evt\uFFFD-9" || rej.Topic != r.Topic || rej.Partition != 1 || rej.Offset != 7 {
		t.Fatalf("rejection = %+v", rej)
	}
	if b := rej.Headers["blob"]; len(b) > store.MaxRejectionHeaderBytes || strings.ContainsRune(b, 0xFFFD) && !strings.HasPrefix(b, "é") {
		t.Fatalf("blob kept as %d bytes", len(b))
	}
}
