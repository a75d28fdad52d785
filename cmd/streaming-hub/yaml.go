package main

// yaml.go: -o yaml, the API's JSON answer written as YAML, keys in the order
// they came. A small emitter is enough: the answers are plain JSON values.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// printYAML writes a JSON document as YAML.
func printYAML(w io.Writer, raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return fmt.Errorf("the answer is not JSON: %v", err)
	}
	var b strings.Builder
	if isBlock(v) {
		writeBlock(&b, v, 0)
	} else {
		b.WriteString(yamlScalar(v) + "\n")
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// member is one key of a JSON object; objects keep their keys' order.
type member struct {
	key   string
	value any
}

type object []member

func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := object{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				obj = append(obj, member{k.(string), v})
			}
			_, err := dec.Token() // }
			return obj, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token() // ]
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil // string, json.Number, bool, nil
	}
}

// isBlock: a non-empty object or list, written over several lines.
func isBlock(v any) bool {
	switch v := v.(type) {
	case object:
		return len(v) > 0
	case []any:
		return len(v) > 0
	}
	return false
}

// writeBlock writes a non-empty object or list, each line indented by ind.
func writeBlock(b *strings.Builder, v any, ind int) {
	pad := strings.Repeat(" ", ind)
	switch v := v.(type) {
	case object:
		for _, m := range v {
			b.WriteString(pad + yamlString(m.key) + ":")
			writeValue(b, m.value, ind+2)
		}
	case []any:
		for _, x := range v {
			b.WriteString(pad + "-")
			if obj, ok := x.(object); ok && len(obj) > 0 {
				// "- key: value" with the object's other keys under it.
				var inner strings.Builder
				writeBlock(&inner, obj, ind+2)
				b.WriteString(" " + strings.TrimLeft(inner.String(), " "))
				continue
			}
			writeValue(b, x, ind+2)
		}
	}
}

// writeValue writes what follows "key:" or "-".
func writeValue(b *strings.Builder, v any, ind int) {
	if isBlock(v) {
		b.WriteString("\n")
		writeBlock(b, v, ind)
		return
	}
	b.WriteString(" " + yamlScalar(v) + "\n")
}

func yamlScalar(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		if v {
			return "true"
		}
		return "false"
	case json.Number:
		return v.String()
	case string:
		return yamlString(v)
	case object:
		return "{}"
	case []any:
		return "[]"
	}
	return fmt.Sprint(v)
}

// plainYAML is what may stay unquoted: it cannot read as another type (a
// number, a time, a bool) nor as YAML syntax.
var plainYAML = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_./+-]*$`)

var yamlReserved = map[string]bool{
	"true": true, "false": true, "yes": true, "no": true, "on": true, "off": true,
	"y": true, "n": true, "null": true, "~": true,
}

// yamlString writes s plain when that is safe, else double-quoted (a JSON
// string is a valid YAML double-quoted scalar).
func yamlString(s string) string {
	if plainYAML.MatchString(s) && !yamlReserved[strings.ToLower(s)] {
		return s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}
