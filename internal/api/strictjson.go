package api

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	hub "github.com/lerianstudio/streaming-hub"
)

// checkJSONText refuses what encoding/json would let through silently
// (SPEC 28): a string that is not valid UTF-8 (raw bytes, or a \u escape
// of a lone surrogate), which it would store as U+FFFD, and a key repeated
// in one object, of which it would keep the last. It walks the first
// value of data token by token, at any depth (raw fields such as filters
// included), and names the JSON path of what it refuses:
// `destination.headers.X-A: not valid UTF-8`, `filters[0].exact.subject:
// duplicate key`. Syntax errors are left to the decoder, which meets them
// at the same byte.
func checkJSONText(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // numbers are not parsed: 1e999 must not end the walk early
	allValid := utf8.Valid(data)
	var stack []*jsonFrame
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil // the decoder answers it
		}
		var top *jsonFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				stack = append(stack, &jsonFrame{object: v == '{', path: top.next(), wantKey: v == '{'})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			// Token has already replaced what is invalid: look at the
			// string as it came. Between start and the token there are
			// only blanks, a comma or a colon: the first quote opens it.
			raw := data[start:dec.InputOffset()]
			raw = raw[bytes.IndexByte(raw, '"'):]
			valid := (allValid || utf8.Valid(raw)) && !loneSurrogate(raw)
			if top != nil && top.wantKey {
				if !valid {
					return hub.Errorf(hub.EINVALIDREQUEST, "%s: a key is not valid UTF-8", fieldName(top.path))
				}
				if top.seen == nil {
					top.seen = map[string]bool{}
				}
				if top.seen[v] {
					return hub.Errorf(hub.EINVALIDREQUEST, "%s: duplicate key", joinPath(top.path, v))
				}
				top.seen[v] = true
				top.key, top.wantKey = v, false
				continue
			}
			if path := top.next(); !valid {
				return hub.Errorf(hub.EINVALIDREQUEST, "%s: not valid UTF-8", fieldName(path))
			}
		default:
			top.next()
		}
		if len(stack) == 0 {
			return nil // the first value is over; the decoder refuses a second
		}
	}
}

// jsonFrame is an object or array the walk is inside.
type jsonFrame struct {
	object  bool
	path    string
	index   int    // an array's next element
	key     string // an object's current key
	wantKey bool   // an object expects a key (or its end) next
	seen    map[string]bool
}

// next returns the path of the value that comes next in f (the top-level
// value when f is nil), and moves f past it.
func (f *jsonFrame) next() string {
	switch {
	case f == nil:
		return ""
	case f.object:
		f.wantKey = true
		return joinPath(f.path, f.key)
	default:
		f.index++
		return f.path + "[" + strconv.Itoa(f.index-1) + "]"
	}
}

func joinPath(path, key string) string {
	key = clipText(key, 64)
	if !hub.PlainText(key) || key == "" {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldName is how an error names path; "" is the body itself.
func fieldName(path string) string {
	if path == "" {
		return "body"
	}
	return path
}

// clipText keeps at most max bytes of s, cut on a rune boundary, with "…"
// appended when it cut.
func clipText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// loneSurrogate reports whether the quoted JSON string raw escapes half
// of a surrogate pair without its other half (\ud800 alone): no character,
// which encoding/json would decode as U+FFFD.
func loneSurrogate(raw []byte) bool {
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
			return false // a syntax error: the decoder answers it
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

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[at:at+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(n), true
}
