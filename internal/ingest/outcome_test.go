package ingest

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// rules is every metric label a rejection may carry: a fixed, small set
// that no producer can grow. A new rule must be added here.
var rules = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range []string{
		"record value exceeds 1048576 bytes",
		"invalid ce- attribute name",
		"duplicate ce- extension with different values",
		"ce- extension must be at most 2048 bytes",
		"ce- extension must be valid UTF-8",
		"ce- extension must not contain control characters",
		"more than 32 ce- extensions",
		"ce- extension values exceed 8192 bytes in all",
		"ce-specversion must be 1.0",
		"ce-type must be at most 256 bytes",
		"ce-type must be studio.lerian.<resource>.<event> with segments [a-z0-9_-]+",
		"ce-type studio.lerian.hub.* is reserved for the hub's own events",
		"ce-resourcetype must equal the <resource> of ce-type",
		"ce-eventtype must equal the <event> of ce-type",
		"ce-time must be an RFC 3339 timestamp",
		"ce-tenantid must be 1..256 bytes of [A-Za-z0-9._:-]",
		"ce-schemaversion must be a semantic version MAJOR.MINOR.PATCH",
		"ce-schemaversion major is out of range",
		"content-type and ce-datacontenttype disagree",
		"duplicate content-type with different values",
		ReasonSignatureInvalid, ReasonSignatureUnknownKey, ReasonSignatureMissing,
	} {
		m[r] = true
	}
	for k := range known {
		m["missing "+k] = true
		m["empty "+k] = true
		m["duplicate "+k+" with different values"] = true
	}
	for _, name := range []string{"ce-id", "ce-source", "ce-subject", "ce-dataschema", "content type"} {
		for _, rule := range []string{"must be valid UTF-8", "must not contain control characters"} {
			m[name+" "+rule] = true
		}
	}
	for name, n := range map[string]int{"ce-id": maxIDLen, "ce-source": maxSourceLen, "ce-subject": maxSubjectLen, "ce-dataschema": maxAttrLen, "content type": maxAttrLen} {
		m[fmt.Sprintf("%s must be at most %d bytes", name, n)] = true
	}
	return m
}()

// checkOutcome asserts what docs/wire-contract.md promises of every rejection: a
// storable, bounded reason and a label from the fixed set.
func checkOutcome(t *testing.T, out Outcome) {
	t.Helper()
	if out.Reason == "" {
		return
	}
	if !utf8.ValidString(out.Reason) || strings.ContainsRune(out.Reason, 0) || len(out.Reason) > MaxReasonBytes {
		t.Fatalf("reason %q: not valid UTF-8 without NUL of at most %d bytes", out.Reason, MaxReasonBytes)
	}
	if !rules[out.Rule] {
		t.Fatalf("metric label %q (reason %q) is not in the fixed set", out.Rule, out.Reason)
	}
}

func extensions(n, size int) []kgo.RecordHeader {
	var hs []kgo.RecordHeader
	for i := range n {
		hs = append(hs, kgo.RecordHeader{Key: fmt.Sprintf("ce-ext%d", i), Value: []byte(strings.Repeat("v", size))})
	}
	return hs
}

func TestParse_HostileHeadersGetBoundedReasonsAndFixedLabels(t *testing.T) {
	huge := strings.Repeat("n", 200<<10)
	cases := []struct {
		name  string
		extra []kgo.RecordHeader
		rule  string // "" means accepted
	}{
		{"foreign header with NUL repeated with different values is ignored",
			[]kgo.RecordHeader{{Key: "x-bad\x00nul", Value: []byte("a")}, {Key: "x-bad\x00nul", Value: []byte("b")}}, ""},
		{"foreign 200 KB header name repeated is ignored",
			[]kgo.RecordHeader{{Key: huge, Value: []byte("a")}, {Key: huge, Value: []byte("b")}}, ""},
		{"traceparent repeated with different values drops the trace, keeps the event",
			[]kgo.RecordHeader{{Key: "traceparent", Value: []byte("00-a-b-01")}, {Key: "traceparent", Value: []byte("00-c-d-01")}}, ""},
		{"ce- name with NUL", []kgo.RecordHeader{{Key: "ce-bad\x00nul", Value: []byte("a")}}, "invalid ce- attribute name"},
		{"ce- name of invalid UTF-8", []kgo.RecordHeader{{Key: "ce-\xff\xfe", Value: []byte("a")}}, "invalid ce- attribute name"},
		{"ce- name of 200 KB", []kgo.RecordHeader{{Key: "ce-" + huge, Value: []byte("a")}}, "invalid ce- attribute name"},
		{"ce- name of 21 characters", []kgo.RecordHeader{{Key: "ce-" + strings.Repeat("a", 21), Value: []byte("a")}}, "invalid ce- attribute name"},
		{"ce- name of 20 characters", []kgo.RecordHeader{{Key: "ce-" + strings.Repeat("a", 20), Value: []byte("a")}}, ""},
		{"extension repeated with different values",
			[]kgo.RecordHeader{{Key: "ce-x", Value: []byte("a")}, {Key: "ce-x", Value: []byte("b")}}, "duplicate ce- extension with different values"},
		{"extension value with NUL", []kgo.RecordHeader{{Key: "ce-x", Value: []byte("a\x00")}}, "ce- extension must not contain control characters"},
		{"32 extensions", extensions(32, 10), ""},
		{"33 extensions", extensions(33, 10), "more than 32 ce- extensions"},
		{"8 KiB of extension values", extensions(4, 2048), ""},
		{"more than 8 KiB of extension values", extensions(5, 2000), "ce- extension values exceed 8192 bytes in all"},
		{"300 extensions of 2000 bytes", extensions(300, 2000), "more than 32 ce- extensions"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, out := Parse(record(validHeaders(), c.extra...), maxRecordBytes)
			checkOutcome(t, out)
			if out.Rule != c.rule {
				t.Fatalf("rule = %q (reason %q), want %q", out.Rule, out.Reason, c.rule)
			}
		})
	}
}

func TestParse_ReservedAndConsistentTypes(t *testing.T) {
	cases := []struct {
		set  map[string]string
		rule string
	}{
		{map[string]string{"ce-type": "studio.lerian.hub.subscription.disabled"}, "ce-type studio.lerian.hub.* is reserved for the hub's own events"},
		{map[string]string{"ce-type": "studio.lerian.hub.verification"}, "ce-type studio.lerian.hub.* is reserved for the hub's own events"},
		{map[string]string{"ce-type": "studio.lerian.ledger.transaction.created", "ce-resourcetype": "transaction", "ce-eventtype": "created"}, ""},
		{map[string]string{"ce-type": "studio.lerian.ledger.transaction.created", "ce-resourcetype": "balance"}, "ce-resourcetype must equal the <resource> of ce-type"},
		{map[string]string{"ce-type": "studio.lerian.ledger.transaction.created", "ce-eventtype": "posted"}, "ce-eventtype must equal the <event> of ce-type"},
	}
	for _, c := range cases {
		h := validHeaders()
		for k, v := range c.set {
			h[k] = v
		}
		_, out := Parse(record(h), maxRecordBytes)
		checkOutcome(t, out)
		if out.Rule != c.rule {
			t.Errorf("%v: rule %q, want %q", c.set, out.Rule, c.rule)
		}
	}
}

func TestParse_SystemEventIsDiscardedNotRejected(t *testing.T) {
	h := validHeaders()
	delete(h, "ce-tenantid")
	h["ce-systemevent"] = "true"
	ev, out := Parse(record(h), maxRecordBytes)
	if out.Reason != "" || !out.System || ev.ID != "" {
		t.Fatalf("system event: outcome %+v, event %+v", out, ev)
	}
	// A malformed system event is still a rejection.
	h["ce-specversion"] = "0.3"
	if _, out := Parse(record(h), maxRecordBytes); out.Reason != "ce-specversion must be 1.0" || out.System {
		t.Fatalf("malformed system event: %+v", out)
	}
	// ce-systemevent false is an ordinary event, which needs its tenant.
	h = validHeaders()
	h["ce-systemevent"] = "false"
	if ev, out := Parse(record(h), maxRecordBytes); out.Reason != "" || out.System || ev.TenantID != "acme" {
		t.Fatalf("ce-systemevent false: %+v %+v", out, ev)
	}
}

func TestSplit_CountsSystemEventsApart(t *testing.T) {
	sys := validHeaders()
	delete(sys, "ce-tenantid")
	sys["ce-systemevent"] = "true"
	bad := validHeaders()
	bad["ce-specversion"] = "2"
	p := split([]*kgo.Record{record(validHeaders()), record(sys), record(bad)}, maxRecordBytes, nil, "")
	if len(p.Events) != 1 || len(p.Rejected) != 1 || p.systemEvents != 1 || p.rules[0] != "ce-specversion must be 1.0" {
		t.Fatalf("split: %d events, %d rejected (%v), %d system", len(p.Events), len(p.Rejected), p.rules, p.systemEvents)
	}
}
