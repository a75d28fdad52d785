package api

import (
	"strings"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
)

// TestCheckJSONText_NamesThePathOfWhatItRefuses: invalid UTF-8 (raw bytes
// or a lone surrogate escape) and a key repeated in one object, at any
// depth, are refused naming the JSON path; what is valid passes.
func TestCheckJSONText_NamesThePathOfWhatItRefuses(t *testing.T) {
	for body, want := range map[string]string{
		"{\"name\":\"a\xffb\"}":                                              "name: not valid UTF-8",
		`{"name":"\ud800"}`:                                                  "name: not valid UTF-8",
		`{"name":"\udc00x"}`:                                                 "name: not valid UTF-8",
		`{"name":"\ud800\u0041"}`:                                            "name: not valid UTF-8",
		"{\"destination\":{\"headers\":{\"X-A\":\"v\xc3\"}}}":                "destination.headers.X-A: not valid UTF-8",
		"{\"destination\":{\"headers\":{\"X-\xfe\":\"v\"}}}":                 "destination.headers: a key is not valid UTF-8",
		"{\"event_types\":[{\"type\":\"a.b\"},{\"type\":\"\xed\xa0\x80\"}]}": "event_types[1].type: not valid UTF-8",
		"{\"filters\":[{\"exact\":{\"subject\":\"\xff\"}}]}":                 "filters[0].exact.subject: not valid UTF-8",
		"\"\xff\"":                "body: not valid UTF-8",
		"[1,\"\xff\"]":            "[1]: not valid UTF-8",
		`{"name":"a","name":"b"}`: "name: duplicate key",
		`{"destination":{"headers":{"X-A":"1","X-A":"2"}}}`:                           "destination.headers.X-A: duplicate key",
		`{"filters":[{"exact":{"subject":"a","subject":"b"}}]}`:                       "filters[0].exact.subject: duplicate key",
		`{"filters":[{"any":[{"exact":{"a":"1"}},{"not":{},"not":{}}]}]}`:             "filters[0].any[1].not: duplicate key",
		`{"x":{"max_in_flight":1e999},"name":"\udfff"}`:                               "name: not valid UTF-8",
		`{"` + strings.Repeat("k", 100) + `":1,"` + strings.Repeat("k", 100) + `":2}`: strings.Repeat("k", 64) + "…: duplicate key",
	} {
		err := checkJSONText([]byte(body))
		if hub.ErrorCode(err) != hub.EINVALIDREQUEST || hub.ErrorMessage(err) != want {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	for _, body := range []string{
		`{}`, `[]`, `1`, `null`, `"x"`,
		`{"name":"caf\u00e9 \ud83d\ude00 ☕ \ufffd \\ud800"}`, // a pair, U+FFFD sent as such, an escaped backslash
		`{"a":{"k":1},"b":{"k":1},"c":[{"k":1},{"k":1}]}`,    // the same key in different objects
		`{"Name":"a","name":"b"}`,                            // JSON keys differ by case
		`{"a":[1,2,{"b":[]}],"c":{}}`,
		`{"n":` + "\xff", // a syntax error: the decoder's to answer
	} {
		if err := checkJSONText([]byte(body)); err != nil {
			t.Errorf("%q: %v, want nil", body, err)
		}
	}
}

// TestDecodeJSON_StrictTextBeforeTheFields: the body's text is checked
// before its fields, so a raw field (filters, rate_limit, auth) holds
// nothing encoding/json would have replaced or dropped.
func TestDecodeJSON_StrictTextBeforeTheFields(t *testing.T) {
	var req subscriptionRequest
	err := decodeJSON([]byte(`{"filters":[{"exact":{"type":"a","type":"b"}}],"name":"n"}`), &req)
	if hub.ErrorMessage(err) != "filters[0].exact.type: duplicate key" {
		t.Fatalf("duplicate inside filters: %v", err)
	}
	if err := decodeJSON([]byte("{\"destination\":{\"auth\":{\"type\":\"bearer\",\"token\":\"t\xff\"}}}"), &req); hub.ErrorMessage(err) != "destination.auth.token: not valid UTF-8" {
		t.Fatalf("invalid byte in a sealed credential: %v", err)
	}
	if err := decodeJSON([]byte(`{"name":"ok"} {"name":"\ud800"}`), &req); hub.ErrorCode(err) != hub.EINVALID {
		t.Fatalf("a second value: %v", err)
	}
	if err := decodeJSON([]byte(" \n"), &req); err != nil {
		t.Fatalf("empty body: %v", err)
	}
}
