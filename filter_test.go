package hub

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func filterEvent() *Event {
	return &Event{
		TenantID: "acme", ID: "evt-1", SpecVersion: "1.0",
		Type: "studio.lerian.ledger.transaction.posted", EventType: "transaction.posted",
		Source: "//midaz/ledger", Subject: "acc-1.brl", Time: "2026-01-02T03:04:05Z",
		SchemaVersion: "1.2.3", SchemaMajor: 1, DataContentType: "application/json",
		Extensions: map[string]string{"ce-resourcetype": "transaction", "ce-region": "br"},
	}
}

func TestFilters_EachDialectAndAttribute(t *testing.T) {
	cases := []struct {
		filters string
		want    bool
	}{
		{`[{"exact":{"subject":"acc-1.brl"}}]`, true},
		{`[{"exact":{"subject":"acc-1"}}]`, false},
		{`[{"exact":{"subject":"ACC-1.BRL"}}]`, false}, // case-sensitive
		{`[{"prefix":{"source":"//midaz/"}}]`, true},
		{`[{"prefix":{"source":"//other/"}}]`, false},
		{`[{"suffix":{"subject":".brl"}}]`, true},
		{`[{"suffix":{"subject":".usd"}}]`, false},
		{`[{"exact":{"id":"evt-1"}}]`, true},
		{`[{"exact":{"type":"studio.lerian.ledger.transaction.posted"}}]`, true},
		{`[{"exact":{"type":"transaction.posted"}}]`, false}, // type is the whole ce-type
		{`[{"exact":{"tenantid":"acme"}}]`, true},
		{`[{"prefix":{"schemaversion":"1."}}]`, true},
		{`[{"exact":{"datacontenttype":"application/json"}}]`, true},
		{`[{"exact":{"specversion":"1.0"}}]`, true},
		{`[{"prefix":{"time":"2026-01-02"}}]`, true},
		{`[{"prefix":{"subject":""}}]`, true}, // an empty prefix: the attribute is present
		// Extensions, by name without ce-.
		{`[{"exact":{"resourcetype":"transaction"}}]`, true},
		{`[{"exact":{"region":"br"}}]`, true},
		{`[{"exact":{"region":"us"}}]`, false},
		// Absent attributes satisfy no exact, prefix or suffix; not of one holds.
		{`[{"exact":{"dataschema":""}}]`, false},
		{`[{"prefix":{"dataschema":""}}]`, false},
		{`[{"suffix":{"eventtype":"posted"}}]`, false},
		{`[{"not":{"exact":{"dataschema":"x"}}}]`, true},
		{`[{"not":{"prefix":{"missing":""}}}]`, true},
		// Combinators.
		{`[{"all":[{"prefix":{"source":"//midaz/"}},{"suffix":{"subject":".brl"}}]}]`, true},
		{`[{"all":[{"prefix":{"source":"//midaz/"}},{"suffix":{"subject":".usd"}}]}]`, false},
		{`[{"any":[{"exact":{"subject":"x"}},{"suffix":{"subject":".brl"}}]}]`, true},
		{`[{"any":[{"exact":{"subject":"x"}},{"exact":{"subject":"y"}}]}]`, false},
		{`[{"not":{"exact":{"subject":"acc-1.brl"}}}]`, false},
		{`[{"not":{"not":{"exact":{"subject":"acc-1.brl"}}}}]`, true},
		// Nesting to the limit of 4.
		{`[{"all":[{"any":[{"not":{"exact":{"region":"us"}}}]}]}]`, true},
		{`[{"all":[{"any":[{"not":{"exact":{"region":"br"}}}]}]}]`, false},
		// The top-level list: all must hold.
		{`[{"exact":{"region":"br"}},{"prefix":{"source":"//midaz/"}}]`, true},
		{`[{"exact":{"region":"br"}},{"prefix":{"source":"//x/"}}]`, false},
		// None.
		{`[]`, true},
		{`null`, true},
	}
	for _, c := range cases {
		t.Run(c.filters, func(t *testing.T) {
			fs, err := ParseFilters([]byte(c.filters))
			if err != nil {
				t.Fatalf("ParseFilters: %v", err)
			}
			if got := MatchFilters(fs, filterEvent()); got != c.want {
				t.Errorf("match = %v, want %v", got, c.want)
			}
		})
	}
}

// Subject, dataschema and extensions are optional: an event without them
// satisfies no exact, prefix or suffix on them.
func TestFilters_AbsentOptionalAttributes(t *testing.T) {
	ev := filterEvent()
	ev.Subject, ev.DataSchema, ev.Extensions = "", "", nil
	for _, f := range []string{
		`[{"exact":{"subject":""}}]`, `[{"prefix":{"subject":""}}]`, `[{"suffix":{"subject":""}}]`,
		`[{"prefix":{"resourcetype":""}}]`, `[{"prefix":{"dataschema":""}}]`,
		`[{"any":[{"prefix":{"subject":""}},{"prefix":{"region":""}}]}]`,
	} {
		fs, err := ParseFilters([]byte(f))
		if err != nil {
			t.Fatal(err)
		}
		if MatchFilters(fs, ev) {
			t.Errorf("%s matched an event without the attribute", f)
		}
		if neg := []Filter{{Dialect: FilterNot, Children: fs}}; !MatchFilters(neg, ev) {
			t.Errorf("not %s did not match an event without the attribute", f)
		}
	}
}

// Operational events carry the hub's own attributes.
func TestFilters_OperationalEventAttributes(t *testing.T) {
	ev := &Event{TenantID: "acme", ID: "hub_1", Type: OperationalCEType(EventSubscriptionDisabled),
		EventType: EventSubscriptionDisabled, Source: OperationalSource, Subject: "sub_1", SchemaVersion: OperationalSchemaVersion}
	fs, err := ParseFilters([]byte(`[{"exact":{"source":"` + OperationalSource + `"}},{"exact":{"subject":"sub_1"}},{"prefix":{"type":"studio.lerian.hub."}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if !MatchFilters(fs, ev) {
		t.Error("an operational event did not match filters on its attributes")
	}
}

func TestParseFilters_ErrorsNameThePath(t *testing.T) {
	deep := `{"exact":{"subject":"a"}}`
	for range 4 {
		deep = `{"not":` + deep + `}`
	}
	var many []string
	for i := range 33 {
		many = append(many, fmt.Sprintf(`{"exact":{"subject":"s%d"}}`, i))
	}
	nested := `[{"all":[` + strings.Join(many[:20], ",") + `]},{"any":[` + strings.Join(many[:20], ",") + `]}]`
	cases := []struct{ filters, want string }{
		{`[{"exact":{"subject":"a"}},{"any":[{"regex":{"subject":"a"}}]}]`, `filters[1].any[0]: unknown dialect "regex"`},
		{`{"exact":{"subject":"a"}}`, `filters: must be a list of filter expressions`},
		{`"x"`, `filters: must be a list of filter expressions`},
		{`[1]`, `filters[0]: must be an object with one dialect`},
		{`[null]`, `filters[0]: must be an object with one dialect`},
		{`[{}]`, `filters[0]: must have exactly one dialect, has 0`},
		{`[{"exact":{"subject":"a"},"prefix":{"subject":"a"}}]`, `filters[0]: must have exactly one dialect, has 2`},
		{`[{"exact":{}}]`, `filters[0].exact: must name exactly one attribute, names 0`},
		{`[{"prefix":{"subject":"a","source":"b"}}]`, `filters[0].prefix: must name exactly one attribute, names 2`},
		{`[{"suffix":"subject"}]`, `filters[0].suffix: must be an object of one attribute and its value`},
		{`[{"exact":{"Subject":"a"}}]`, `filters[0].exact: attribute "Subject" must be a lower-case CloudEvents attribute name`},
		{`[{"exact":{"ce-subject":"a"}}]`, `filters[0].exact: attribute "ce-subject" must be`},
		{`[{"exact":{"abcdefghijklmnopqrstu":"a"}}]`, `filters[0].exact: attribute "abcdefghijklmnopqrstu" must be`},
		{`[{"exact":{"":"a"}}]`, `filters[0].exact: attribute "" must be`},
		{`[{"exact":{"subject":1}}]`, `filters[0].exact.subject: must be a string`},
		{`[{"exact":{"subject":null}}]`, `filters[0].exact.subject: must be a string`},
		{`[{"exact":{"subject":"a\u0000b"}}]`, `filters[0].exact.subject: must be valid UTF-8 without control characters`},
		{`[{"exact":{"subject":"` + strings.Repeat("a", 2049) + `"}}]`, `filters[0].exact.subject: at most 2048 bytes`},
		{`[{"all":[]}]`, `filters[0].all: must be a non-empty list of filter expressions`},
		{`[{"any":{"exact":{"subject":"a"}}}]`, `filters[0].any: must be a non-empty list of filter expressions`},
		{`[{"not":[]}]`, `filters[0].not: must be an object with one dialect`},
		{`[{"not":{"all":[{"not":{"nope":{}}}]}}]`, `filters[0].not.all[0].not: unknown dialect "nope"`},
		{`[` + deep + `]`, `filters[0].not.not.not.not: filters nest at most 4 levels deep`},
		{`[` + strings.Join(many, ",") + `]`, `filters[32]: more than 32 filter expressions in all`},
		{nested, `filters[1].any[10]: more than 32 filter expressions in all`},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			_, err := ParseFilters([]byte(c.filters))
			if err == nil {
				t.Fatalf("ParseFilters(%s) = nil error", c.filters)
			}
			if ErrorCode(err) != EINVALID {
				t.Errorf("code = %q, want %q", ErrorCode(err), EINVALID)
			}
			if !strings.HasPrefix(ErrorMessage(err), c.want) {
				t.Errorf("error = %q, want it to begin %q", ErrorMessage(err), c.want)
			}
		})
	}
}

func TestParseFilters_AtTheLimits(t *testing.T) {
	deep := `{"exact":{"subject":"a"}}`
	for range 3 {
		deep = `{"not":` + deep + `}`
	}
	var many []string
	for i := range 32 {
		many = append(many, fmt.Sprintf(`{"exact":{"subject":"s%d"}}`, i))
	}
	for _, f := range []string{`[` + deep + `]`, `[` + strings.Join(many, ",") + `]`,
		`[{"exact":{"abcdefghijklmnopqrst":"` + strings.Repeat("a", 2048) + `"}}]`} {
		if _, err := ParseFilters([]byte(f)); err != nil {
			t.Errorf("ParseFilters at the limit: %v", err)
		}
	}
}

// What the API shows and the store keeps is the CloudEvents form, and it
// parses back to the same filters.
func TestFilters_JSONRoundTrip(t *testing.T) {
	in := `[{"exact":{"subject":"acc-1"}},{"any":[{"prefix":{"source":"//midaz/"}},{"not":{"suffix":{"resourcetype":".x"}}}]},{"all":[{"exact":{"id":"e"}}]}]`
	fs, err := ParseFilters([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(fs)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("marshal = %s\nwant      %s", out, in)
	}
	again, err := ParseFilters(out)
	if err != nil {
		t.Fatal(err)
	}
	if again2, _ := json.Marshal(again); string(again2) != in {
		t.Errorf("re-parse = %s", again2)
	}
}

func TestSubscription_WantsTypeAndFilters(t *testing.T) {
	fs, _ := ParseFilters([]byte(`[{"exact":{"region":"br"}}]`))
	s := Subscription{EventTypes: []EventTypeRef{{Type: "transaction.posted", SchemaMajor: 1}}, Filters: fs}
	ev := filterEvent()
	if !s.Wants(ev) {
		t.Error("a matching event is not wanted")
	}
	ev.Extensions = map[string]string{"ce-region": "us"}
	if s.Wants(ev) {
		t.Error("an event the filter refuses is wanted")
	}
	ev = filterEvent()
	ev.EventType = "transaction.voided"
	if s.Wants(ev) {
		t.Error("an event of another type is wanted")
	}
}

// BenchmarkWants is one subscription's decision for one event, without
// filters and with 3 (6 expressions) that the event satisfies.
//
//	go test . -run '^$' -bench Wants -count 5
func BenchmarkWants(b *testing.B) {
	fs, err := ParseFilters([]byte(`[{"prefix":{"source":"//midaz/"}},{"not":{"exact":{"subject":"nobody"}}},` +
		`{"any":[{"suffix":{"type":".xyz"}},{"exact":{"resourcetype":"transaction"}}]}]`))
	if err != nil {
		b.Fatal(err)
	}
	ev := filterEvent()
	for _, n := range []int{0, 3} {
		b.Run(fmt.Sprintf("filters=%d", n), func(b *testing.B) {
			s := Subscription{EventTypes: []EventTypeRef{{Type: "transaction.posted", SchemaMajor: 1}}}
			if n > 0 {
				s.Filters = fs
			}
			for b.Loop() {
				if !s.Wants(ev) {
					b.Fatal("not wanted")
				}
			}
		})
	}
}
