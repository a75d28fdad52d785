package api

import (
	"strconv"
	"strings"
	"unicode/utf8"

	hub "github.com/lerianstudio/streaming-hub"
)

// maxJSONDepth is how deeply a request body's objects and arrays may nest
// (docs/concepts.md#tenants-keys-and-subscriptions): no request of the API
// needs a tenth of it, and every decoder after the check recurses once per
// level.
const maxJSONDepth = 64

// maxPathShown bounds the JSON path an error message names: a path 64
// levels deep of 64-byte keys would be 4 KB of message.
const maxPathShown = 160

// checkJSONText refuses what encoding/json would let through silently
// (docs/concepts.md#tenants-keys-and-subscriptions): a string that is not valid UTF-8 (raw
// bytes, or a \u escape of a lone surrogate), which it would store as
// U+FFFD, and a key repeated in one object, of which it would keep the
// last; and objects and arrays nested deeper than maxJSONDepth. It scans
// the first value of data once, at any depth (raw fields such as filters
// included), and names the JSON path of what it refuses:
// `destination.headers.X-A: not valid UTF-8`, `filters[0].exact.subject:
// duplicate key`. Syntax errors are left to the decoder, which meets them
// at the same byte.
//
// Its memory is linear in len(data) whatever the shape of the body: the
// path is not built as the scan descends, only for an error message, from
// the offsets of the keys and the indexes of the elements on its stack
// (at most maxJSONDepth of them); the keys seen in the open objects are
// the only copies it keeps.
func checkJSONText(data []byte) error {
	c := jsonChecker{data: data, allValid: utf8.Valid(data)}
	c.stack = c.frames[:0]
	return c.check()
}

// jsonChecker is one scan of checkJSONText.
type jsonChecker struct {
	data     []byte
	allValid bool // no string needs its own UTF-8 check
	stack    []jsonFrame
	frames   [maxJSONDepth]jsonFrame
	// seen holds the keys of the open object at each depth; a small map is
	// cleared and used again by the next object at its depth.
	seen    [maxJSONDepth]map[string]struct{}
	scratch []byte // an escaped key, unescaped
}

// jsonFrame is an object or array the scan is inside.
type jsonFrame struct {
	object bool
	index  int // an array's current element
	// key is an object's current key as it came, quotes included:
	// data[keyStart:keyEnd].
	keyStart, keyEnd int
}

// syntaxError stops the scan: the decoder answers it.
type syntaxError struct{}

func (syntaxError) Error() string { return "syntax error" }

func (c *jsonChecker) check() error {
	err := c.scan()
	if _, ok := err.(syntaxError); ok {
		return nil
	}
	return err
}

func (c *jsonChecker) scan() error {
	d := c.data
	i := c.skip(0)
	for {
		// A value starts at i.
		if i >= len(d) {
			return syntaxError{}
		}
		switch b := d[i]; {
		case b == '{' || b == '[':
			if len(c.stack) == maxJSONDepth {
				return hub.Errorf(hub.EINVALIDREQUEST, "body: nesting deeper than %d levels at %s", maxJSONDepth, c.path(len(c.stack)))
			}
			c.stack = append(c.stack, jsonFrame{object: b == '{'})
			if i = c.skip(i + 1); i >= len(d) {
				return syntaxError{}
			}
			if b == '{' {
				c.resetSeen(len(c.stack) - 1)
				if d[i] != '}' {
					var err error
					if i, err = c.key(i); err != nil {
						return err
					}
					continue
				}
			} else if d[i] != ']' {
				continue
			}
			c.stack = c.stack[:len(c.stack)-1] // {} or []
			i++
		case b == '"':
			end, valid, _, err := c.str(i)
			if err != nil {
				return err
			}
			if !valid {
				return hub.Errorf(hub.EINVALIDREQUEST, "%s: not valid UTF-8", fieldName(c.path(len(c.stack))))
			}
			i = end
		case b == 't':
			i = c.literal(i, "true")
		case b == 'f':
			i = c.literal(i, "false")
		case b == 'n':
			i = c.literal(i, "null")
		default:
			i = c.number(i)
		}
		if i < 0 {
			return syntaxError{}
		}
		// After a value: the next element or key, or the end of containers.
		for {
			if len(c.stack) == 0 {
				return nil // the first value is over; the decoder refuses a second
			}
			if i = c.skip(i); i >= len(d) {
				return syntaxError{}
			}
			top := &c.stack[len(c.stack)-1]
			if d[i] == ',' {
				i = c.skip(i + 1)
				if !top.object {
					top.index++
					break
				}
				var err error
				if i, err = c.key(i); err != nil {
					return err
				}
				break
			}
			if top.object && d[i] == '}' || !top.object && d[i] == ']' {
				c.stack = c.stack[:len(c.stack)-1]
				i++
				continue
			}
			return syntaxError{}
		}
	}
}

// key reads the key at i in the top object, and the colon after it; it
// answers where the key's value starts.
func (c *jsonChecker) key(i int) (int, error) {
	d := c.data
	if i >= len(d) || d[i] != '"' {
		return 0, syntaxError{}
	}
	end, valid, escaped, err := c.str(i)
	if err != nil {
		return 0, err
	}
	depth := len(c.stack) - 1
	if !valid {
		return 0, hub.Errorf(hub.EINVALIDREQUEST, "%s: a key is not valid UTF-8", fieldName(c.path(depth)))
	}
	top := &c.stack[depth]
	top.keyStart, top.keyEnd = i, end
	k := d[i+1 : end-1]
	if escaped {
		c.scratch = appendUnescaped(c.scratch[:0], k, -1)
		k = c.scratch
	}
	seen := c.seen[depth]
	if seen == nil {
		seen = map[string]struct{}{}
		c.seen[depth] = seen
	}
	if _, dup := seen[string(k)]; dup {
		return 0, hub.Errorf(hub.EINVALIDREQUEST, "%s: duplicate key", c.path(depth+1))
	}
	seen[string(k)] = struct{}{}
	if i = c.skip(end); i >= len(d) || d[i] != ':' {
		return 0, syntaxError{}
	}
	return c.skip(i + 1), nil
}

// resetSeen forgets the keys of the last object at depth. A big map is
// dropped rather than cleared: clearing costs its capacity, and a body of
// many small objects after a big one would pay it for each.
func (c *jsonChecker) resetSeen(depth int) {
	switch m := c.seen[depth]; {
	case len(m) > 64:
		c.seen[depth] = nil
	case len(m) > 0:
		clear(m)
	}
}

// str scans the string whose quote is at i; it answers the offset after
// its closing quote, whether it is valid UTF-8 (with no escape of a lone
// surrogate, which encoding/json would decode as U+FFFD) and whether it
// holds an escape.
func (c *jsonChecker) str(i int) (end int, valid, escaped bool, err error) {
	d := c.data
	valid = true
	for j := i + 1; j < len(d); {
		switch b := d[j]; {
		case b == '"':
			return j + 1, valid, escaped, nil
		case b < 0x20:
			return 0, false, false, syntaxError{}
		case b == '\\':
			escaped = true
			if j+1 >= len(d) {
				return 0, false, false, syntaxError{}
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				r, ok := hex4(d, j+2)
				if !ok {
					return 0, false, false, syntaxError{}
				}
				j += 6
				switch {
				case r >= 0xDC00 && r < 0xE000:
					valid = false
				case r >= 0xD800 && r < 0xDC00:
					// The low half must follow at once; an escape that is
					// not one is scanned on its own by the next turn.
					if lo, ok := hex4(d, j+2); ok && d[j] == '\\' && d[j+1] == 'u' && lo >= 0xDC00 && lo < 0xE000 {
						j += 6
					} else {
						valid = false
					}
				}
			default:
				return 0, false, false, syntaxError{}
			}
		case b < utf8.RuneSelf || c.allValid:
			j++
		default:
			r, size := utf8.DecodeRune(d[j:])
			if r == utf8.RuneError && size == 1 {
				valid = false
			}
			j += size
		}
	}
	return 0, false, false, syntaxError{}
}

// literal answers the offset after word at i, or -1 when it is not there.
func (c *jsonChecker) literal(i int, word string) int {
	if len(c.data)-i < len(word) || string(c.data[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}

// number answers the offset after the JSON number at i, or -1 when there
// is none. Its value is not parsed: 1e999 must not end the scan early.
func (c *jsonChecker) number(i int) int {
	d := c.data
	digits := func(i int) int { // at least one digit, or -1
		j := i
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	default:
		if i = digits(i); i < 0 {
			return -1
		}
	}
	if i < len(d) && d[i] == '.' {
		if i = digits(i + 1); i < 0 {
			return -1
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i = digits(i); i < 0 {
			return -1
		}
	}
	return i
}

// skip answers the offset of the first byte at or after i that is not
// JSON white space.
func (c *jsonChecker) skip(i int) int {
	for i < len(c.data) {
		switch c.data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// path names the value the first n frames of the stack lead to, for an
// error message: `destination.headers.X-A`, `filters[0].any[1]`; "" is
// the body itself. It is built only here, and at most maxPathShown bytes
// of it: then it ends with "…".
func (c *jsonChecker) path(n int) string {
	var b strings.Builder
	for _, f := range c.stack[:n] {
		if b.Len() > maxPathShown {
			break
		}
		if !f.object {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(keyName(c.data[f.keyStart:f.keyEnd]))
	}
	return clipText(b.String(), maxPathShown)
}

// keyName is how a path names the quoted key raw (valid JSON, valid
// UTF-8): at most 64 bytes of it, quoted when it is empty or holds what is
// not plain text.
func keyName(raw []byte) string {
	key := clipText(string(appendUnescaped(nil, raw[1:len(raw)-1], 64+utf8.UTFMax)), 64)
	if !hub.PlainText(key) || key == "" {
		key = strconv.Quote(key)
	}
	return key
}

// appendUnescaped appends the text of a JSON string's content s (valid,
// without its quotes) to dst; with max >= 0, it stops once it has appended
// more than max bytes.
func appendUnescaped(dst, s []byte, max int) []byte {
	start := len(dst)
	for i := 0; i < len(s) && (max < 0 || len(dst)-start <= max); i++ {
		if s[i] != '\\' {
			dst = append(dst, s[i])
			continue
		}
		i++
		switch s[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(s, i+1)
			i += 4
			if r >= 0xD800 && r < 0xDC00 { // a pair: valid, so the low half follows
				lo, _ := hex4(s, i+3)
				r = (r-0xD800)<<10 | (lo - 0xDC00) + 0x10000
				i += 6
			}
			dst = utf8.AppendRune(dst, r)
		default: // " \ /
			dst = append(dst, s[i])
		}
	}
	return dst
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

// hex4 reads the four hexadecimal digits at b[at:].
func hex4(b []byte, at int) (rune, bool) {
	if at < 0 || at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
