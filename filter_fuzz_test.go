package hub

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzParseFilters: whatever a client sends as filters, parsing never
// panics, an error is EINVALID with a message that is valid UTF-8 and
// names the filters, and what parses marshals to a form that parses back
// to the same filters and evaluates the same.
//
//	go test . -run '^$' -fuzz '^FuzzParseFilters$' -fuzztime 15s
func FuzzParseFilters(f *testing.F) {
	for _, seed := range []string{
		`[{"exact":{"subject":"acc-1"}}]`,
		`[{"prefix":{"source":"//midaz/"}},{"suffix":{"subject":".brl"}}]`,
		`[{"all":[{"any":[{"not":{"exact":{"resourcetype":"x"}}}]}]}]`,
		`[{"any":[{"regex":{"subject":"a"}}]}]`,
		`[{"not":{"not":{"not":{"not":{"exact":{"id":"a"}}}}}}]`,
		`[{"exact":{"Subject":"a","b":"c"}}]`,
		`null`, `[]`, `{}`, `[{}]`, `[[]]`, "[{\"exact\":{\"subject\":\"\xff\"}}]",
	} {
		f.Add([]byte(seed))
	}
	ev := filterEvent()
	f.Fuzz(func(t *testing.T, raw []byte) {
		fs, err := ParseFilters(raw)
		if err != nil {
			msg := ErrorMessage(err)
			if ErrorCode(err) != EINVALID || !utf8.ValidString(msg) || len(msg) < 8 || msg[:7] != "filters" {
				t.Fatalf("error %q (code %q) for %q", msg, ErrorCode(err), raw)
			}
			return
		}
		got := MatchFilters(fs, ev)
		out, err := json.Marshal(fs)
		if err != nil {
			t.Fatalf("marshal of parsed %q: %v", raw, err)
		}
		if len(fs) == 0 {
			return
		}
		again, err := ParseFilters(out)
		if err != nil {
			t.Fatalf("%s (from %q) does not parse back: %v", out, raw, err)
		}
		if out2, _ := json.Marshal(again); string(out2) != string(out) {
			t.Fatalf("round trip changed %s into %s", out, out2)
		}
		if MatchFilters(again, ev) != got {
			t.Fatalf("%s evaluates differently after a round trip", out)
		}
	})
}
