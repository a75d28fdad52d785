package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	hub "github.com/lerianstudio/streaming-hub"
)

// HostileBody is a request body built to make a JSON checker or decoder
// spend memory out of proportion to its size.
type HostileBody struct {
	Name string
	Body []byte
}

// HostileBodies are bodies of every shape we could think of, each at most
// size bytes (and about that many): deep objects and arrays, long keys,
// many keys, many duplicate keys, long strings with escapes, invalid UTF-8
// deep inside. None of them is a request any route accepts.
func HostileBodies(size int) []HostileBody {
	key64 := strings.Repeat("k", 64)
	fill := func(head, unit, tail string) []byte { // head, unit repeated, tail: at most size bytes
		var b bytes.Buffer
		b.WriteString(head)
		for b.Len()+len(unit)+len(tail) <= size {
			b.WriteString(unit)
		}
		b.WriteString(tail)
		return b.Bytes()
	}
	keys := func(head, tail string, from int, each func(i int) string) []byte {
		var b bytes.Buffer
		b.WriteString(head)
		for i := from; ; i++ {
			s := each(i)
			if b.Len()+len(s)+len(tail) > size {
				break
			}
			b.WriteString(s)
		}
		b.WriteString(tail)
		return b.Bytes()
	}
	// deepThen is 63 levels of objects with 64-byte keys, then value
	// (which may be an object or array: the 64th level).
	deepThen := func(value func(room int) string) []byte {
		head := strings.Repeat(`{"`+key64+`":`, maxJSONDepth-1)
		tail := strings.Repeat("}", maxJSONDepth-1)
		return []byte(head + value(size-len(head)-len(tail)) + tail)
	}
	// manyKeysDeep is 64 levels of objects, each with its share of
	// distinct keys before the next level: 64 sets of keys open at once.
	manyKeysDeep := func() []byte {
		var b bytes.Buffer
		share := size / maxJSONDepth
		for level := range maxJSONDepth {
			b.WriteString("{")
			for i := 0; b.Len() < (level+1)*share-share/8; i++ {
				b.WriteString(`"k` + strconv.Itoa(i) + `":0,`)
			}
			b.WriteString(`"d":`)
		}
		b.WriteString("0" + strings.Repeat("}", maxJSONDepth))
		return b.Bytes()
	}
	escapes := `\n\t\"\\\/\u00e9\ud83d\ude00`
	return []HostileBody{
		{"deep objects of 64-byte keys", fill("", `{"`+key64+`":`, "")},
		{"deep objects of 64-byte keys, closed", func() []byte {
			n := size / (len(key64) + 6)
			return []byte(strings.Repeat(`{"`+key64+`":`, n) + "0" + strings.Repeat("}", n))
		}()},
		{"deep arrays", fill("", "[", "")},
		{"deep arrays, closed", []byte(strings.Repeat("[", size/2) + strings.Repeat("]", size/2))},
		{"deep mixed", fill("", `{"a":[`, "")},
		{"deep inside filters", fill(`{"filters":`, "[", "")},
		{"deep inside a destination", fill(`{"destination":{"credentials":`, `{"a":`, "")},
		{"deep inside data", fill(`{"data":`, `[{"x":`, "")},
		{"filters nested 60 levels of not", []byte(`{"filters":[` + strings.Repeat(`{"not":`, 60) + `{"exact":{"subject":"a"}}` + strings.Repeat("}", 60) + `]}`)},
		{"a long key given twice", func() []byte {
			k := strings.Repeat("k", size/2-16)
			return []byte(`{"` + k + `":1,"` + k + `":2}`)
		}()},
		{"many distinct keys", keys("{", `"z":0}`, 0, func(i int) string { return `"k` + strconv.Itoa(i) + `":0,` })},
		{"many distinct keys, then the first again", keys("{", `"k0":1}`, 0, func(i int) string { return `"k` + strconv.Itoa(i) + `":0,` })},
		{"many duplicate keys", fill("{", `"a":0,`, `"a":0}`)},
		{"many distinct keys at every depth", manyKeysDeep()},
		{"many small objects", fill("[", `{"a":1,"b":2},`, `{}]`)},
		{"many empty arrays", fill("[", `[],`, `[]]`)},
		{"many numbers", fill(`{"name":[`, `-1.5e999,`, `0]}`)},
		{"a long number", fill(`{"max_in_flight":1`, "1", `}`)},
		{"a long string of escapes, a lone surrogate at its end", fill(`{"name":"`, escapes, `\ud800"}`)},
		{"a long string of escapes, as an unknown field", fill(`{"zz":"`, escapes, `"}`)},
		{"a long key of escapes, given twice", func() []byte {
			k := strings.Repeat(escapes, (size/2-16)/len(escapes))
			return []byte(`{"` + k + `":1,"` + k + `":2}`)
		}()},
		{"invalid UTF-8 deep inside objects", deepThen(func(room int) string {
			return `"` + strings.Repeat("é", (room-4)/2) + "\xff" + `"`
		})},
		{"invalid UTF-8 in a key deep inside", deepThen(func(room int) string {
			return `{"` + strings.Repeat("a", room-8) + "\xfe" + `":1}`
		})},
		{"invalid UTF-8 deep inside arrays", []byte(strings.Repeat("[", maxJSONDepth) + `"` + strings.Repeat("a", size-2*maxJSONDepth-4) + "\xc3" + `"` + strings.Repeat("]", maxJSONDepth))},
		{"a duplicate key deep inside", deepThen(func(room int) string {
			var b strings.Builder
			b.WriteString("{")
			for i := 0; b.Len()+24 < room; i++ {
				b.WriteString(`"k` + strconv.Itoa(i) + `":0,`)
			}
			b.WriteString(`"k0":1}`)
			return b.String()
		})},
		{"white space, then a syntax error", fill("", " ", "{")},
		{"an unterminated string", fill(`{"name":"`, "a", "")},
	}
}

// TestHostileBodies_AreAsBigAsAsked: the bodies the memory tests send are
// as big as a request may be, or they would prove little.
func TestHostileBodies_AreAsBigAsAsked(t *testing.T) {
	for _, h := range HostileBodies(maxBody) {
		if len(h.Body) > maxBody || len(h.Body) < maxBody*9/10 && !strings.Contains(h.Name, "60 levels") {
			t.Errorf("%s: %d bytes, want about %d", h.Name, len(h.Body), maxBody)
		}
	}
}

// TestCheckJSONText_MemoryIsLinearInTheBody: checking a body of the
// largest size, of any shape, allocates at most 16 MiB in all (the old walk
// kept a copy of the whole path at every level: 3.27 GB for 680 KB of
// nested objects), and what it refuses is named in a short message.
func TestCheckJSONText_MemoryIsLinearInTheBody(t *testing.T) {
	const limit = 16 << 20
	for _, h := range HostileBodies(maxBody) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		err := checkJSONText(h.Body)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%-55s %7d bytes: %8d allocated; %v", h.Name, len(h.Body), alloc, err)
		if alloc > limit {
			t.Errorf("%s: checking %d bytes allocated %d bytes, want at most %d", h.Name, len(h.Body), alloc, limit)
		}
		if err != nil && (hub.ErrorCode(err) != hub.EINVALIDREQUEST || len(hub.ErrorMessage(err)) > 300) {
			t.Errorf("%s: %v, want invalid_request in at most 300 bytes", h.Name, err)
		}
	}
}

// TestCheckJSONText_NestingDeeperThan64LevelsIsRefused: 64 levels of
// objects, arrays or both pass the check; a 65th is refused, naming the
// limit and (at most 160 bytes of) where it was met.
func TestCheckJSONText_NestingDeeperThan64LevelsIsRefused(t *testing.T) {
	nest := func(levels int, open, close string) string {
		return strings.Repeat(open, levels) + "1" + strings.Repeat(close, levels)
	}
	k64 := strings.Repeat("k", 64) + "…"
	for _, c := range []struct{ open, close, where string }{
		{"[", "]", strings.Repeat("[0]", 53) + "[…"}, // 160 bytes of 64 levels' path
		{`{"a":`, "}", "a" + strings.Repeat(".a", 63)},
		{`{"a":[`, "]}", "a[0]" + strings.Repeat(".a[0]", 31)},
		{`{"` + strings.Repeat("k", 100) + `":`, "}", k64 + "." + k64 + "." + k64[:160-2*len(k64)-2] + "…"},
	} {
		levels := maxJSONDepth / (len(c.close))
		if err := checkJSONText([]byte(nest(levels, c.open, c.close))); err != nil {
			t.Errorf("%d levels of %s: %v", maxJSONDepth, c.open, err)
		}
		err := checkJSONText([]byte(nest(levels+1, c.open, c.close)))
		want := "body: nesting deeper than 64 levels at " + c.where
		if hub.ErrorCode(err) != hub.EINVALIDREQUEST || hub.ErrorMessage(err) != want {
			t.Errorf("%d levels of %s: %v, want %q", maxJSONDepth+1, c.open, err, want)
		}
	}
}

// FuzzCheckJSONText: the scan refuses what the walk it replaced refused,
// with the same message (its path cut at 160 bytes), and lets through
// what it let through; the walk is kept below as the reference, with the
// depth limit added.
//
//	go test ./internal/api -run '^$' -fuzz FuzzCheckJSONText -fuzztime 30s
func FuzzCheckJSONText(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `1`, `-0.5e+7`, `null`, `true`, `"x"`, ` {"a" : [1, 2.0, {"b": null}], "c": "\u00e9"} `,
		"{\"name\":\"a\xffb\"}", `{"name":"\ud800"}`, `{"name":"\ud800\u0041"}`, `{"name":"\ud83d\ude00"}`,
		`{"a":1,"a":2}`, `{"a\u0062":1,"ab":2}`, `{"":1,"":2}`, `{"\ud83d\ude00":1,"😀":2}`,
		"{\"k\xfe\":1}", `[1,]`, `{"a" 1}`, `{"a":1,}`, `01`, `1.`, `-`, `1e`, `[tru]`, `"\x"`,
		`{"a":"b"} {"a":"\ud800"}`, strings.Repeat("[", 65), strings.Repeat(`{"a":`, 65) + "1",
		"{\"filters\":[{\"any\":[{\"exact\":{\"a\":\"1\"}},{\"not\":{},\"not\":{}}]}]}",
	} {
		f.Add([]byte(s))
	}
	for _, h := range HostileBodies(8 << 10) {
		f.Add(h.Body)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, want := checkJSONText(data), referenceCheck(data)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%q: %v, want %v", data, got, want)
		}
		if got != nil && !utf8.ValidString(hub.ErrorMessage(got)) {
			t.Fatalf("%q: the message is not UTF-8: %q", data, hub.ErrorMessage(got))
		}
	})
}

// referenceCheck is the token walk checkJSONText replaced (kept whole paths
// at every level), with the depth limit added and the path cut as the
// scan cuts it.
func referenceCheck(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	allValid := utf8.Valid(data)
	type frame struct {
		object  bool
		path    string
		index   int
		key     string
		wantKey bool
		seen    map[string]bool
	}
	next := func(f *frame) string {
		switch {
		case f == nil:
			return ""
		case f.object:
			f.wantKey = true
			return refJoin(f.path, f.key)
		default:
			f.index++
			return f.path + "[" + strconv.Itoa(f.index-1) + "]"
		}
	}
	clip := func(p string) string { return clipText(p, maxPathShown) }
	var stack []*frame
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				path := next(top)
				if len(stack) == maxJSONDepth {
					return hub.Errorf(hub.EINVALIDREQUEST, "body: nesting deeper than %d levels at %s", maxJSONDepth, clip(path))
				}
				stack = append(stack, &frame{object: v == '{', path: path, wantKey: v == '{'})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			raw := data[start:dec.InputOffset()]
			raw = raw[bytes.IndexByte(raw, '"'):]
			valid := (allValid || utf8.Valid(raw)) && !refLoneSurrogate(raw)
			if top != nil && top.wantKey {
				if !valid {
					return hub.Errorf(hub.EINVALIDREQUEST, "%s: a key is not valid UTF-8", fieldName(clip(top.path)))
				}
				if top.seen == nil {
					top.seen = map[string]bool{}
				}
				if top.seen[v] {
					return hub.Errorf(hub.EINVALIDREQUEST, "%s: duplicate key", clip(refJoin(top.path, v)))
				}
				top.seen[v] = true
				top.key, top.wantKey = v, false
				continue
			}
			if path := next(top); !valid {
				return hub.Errorf(hub.EINVALIDREQUEST, "%s: not valid UTF-8", fieldName(clip(path)))
			}
		default:
			next(top)
		}
		if len(stack) == 0 {
			return nil
		}
	}
}

func refJoin(path, key string) string {
	key = clipText(key, 64)
	if !hub.PlainText(key) || key == "" {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func refLoneSurrogate(raw []byte) bool {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if i >= len(raw) || raw[i] != 'u' {
			continue
		}
		r, ok := hex4(raw, i+1)
		if !ok {
			return false
		}
		i += 4
		switch {
		case r >= 0xDC00 && r < 0xE000:
			return true
		case r >= 0xD800 && r < 0xDC00:
			if i+6 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
				return true
			}
			lo, ok := hex4(raw, i+3)
			if !ok || lo < 0xDC00 || lo >= 0xE000 {
				return true
			}
			i += 6
		}
	}
	return false
}
