package ingest

import (
	"github.com/lerianstudio/streaming-hub/internal/store"
	"testing"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	hub "github.com/lerianstudio/streaming-hub"
)

// FuzzParse feeds arbitrary header values through the parser: it must never
// panic, and whatever it accepts must be safe to store and send on.
//
//	go test ./internal/ingest -run '^$' -fuzz FuzzParse -fuzztime 30s
func FuzzParse(f *testing.F) {
	f.Add("1.0", "evt-1", "//src", "studio.lerian.transaction.posted", "2026-11-30T12:00:00Z", "acme", "1.0.0", "subj", "ce-x", "v", []byte("{}"))
	f.Add("1.0", "\x00", "", "studio.lerian.a.b.c", "2026-13-40T99:00:00Z", "a b", "01.0.0", "", "CE-ID", "other", []byte(nil))
	f.Add("", "", "", "", "", "", "", "", "", "", []byte{0xff})
	f.Fuzz(func(t *testing.T, spec, id, source, typ, ts, tenant, schema, subject, extKey, extVal string, value []byte) {
		r := &kgo.Record{Topic: "t", Value: value, Headers: []kgo.RecordHeader{
			{Key: "ce-specversion", Value: []byte(spec)}, {Key: "ce-id", Value: []byte(id)},
			{Key: "ce-source", Value: []byte(source)}, {Key: "ce-type", Value: []byte(typ)},
			{Key: "ce-time", Value: []byte(ts)}, {Key: "ce-tenantid", Value: []byte(tenant)},
			{Key: "ce-schemaversion", Value: []byte(schema)}, {Key: "ce-subject", Value: []byte(subject)},
			{Key: extKey, Value: []byte(extVal)},
		}}
		ev, out := Parse(r, maxRecordBytes)
		checkOutcome(t, out)
		if out.System {
			return
		}
		if reason := out.Reason; reason != "" {
			rej := store.SafeRejection(rejection(r, reason))
			for k, v := range rej.Headers {
				if !utf8.ValidString(k) || !utf8.ValidString(v) {
					t.Fatalf("rejection keeps invalid UTF-8: %q=%q", k, v)
				}
			}
			return
		}
		if hub.ValidateTenantID(ev.TenantID) != nil || ev.ID == "" || ev.SpecVersion != "1.0" {
			t.Fatalf("accepted an invalid event: %+v", ev)
		}
		if _, err := hub.ParseCEType(ev.Type); err != nil {
			t.Fatalf("accepted ce-type %q: %v", ev.Type, err)
		}
		for _, s := range append([]string{ev.ID, ev.Source, ev.Subject, ev.DataContentType}, values(ev.Extensions)...) {
			if !utf8.ValidString(s) {
				t.Fatalf("accepted invalid UTF-8 %q", s)
			}
		}
	})
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
