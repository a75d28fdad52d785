package hub

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Filter dialects of the CloudEvents Subscriptions API
// (docs/filters-and-transforms.md).
const (
	FilterExact  = "exact"
	FilterPrefix = "prefix"
	FilterSuffix = "suffix"
	FilterAll    = "all"
	FilterAny    = "any"
	FilterNot    = "not"
)

// Limits of a subscription's filters.
const (
	MaxFilterExpressions = 32   // in all, nested ones included
	MaxFilterDepth       = 4    // a top-level expression is at depth 1
	MaxFilterValueBytes  = 2048 // the longest attribute ingest accepts (ce-source)
	MaxAttributeNameLen  = 20   // the CloudEvents attribute naming rule
)

// Filter is one parsed, validated filter expression over an event's context
// attributes (never its payload). exact, prefix and suffix compare one
// Attribute with Value; all and any hold their Children; not holds exactly
// one child. Build filters with ParseFilters: it checks every rule.
type Filter struct {
	Dialect   string
	Attribute string
	Value     string
	Children  []Filter

	ext string // "ce-" + Attribute, the key of an extension in Event.Extensions
}

// ParseFilters parses and validates a subscription's "filters": a JSON list
// of expressions that must all hold. null and [] mean no filters (nil).
// Errors are EINVALID and name the expression's path, e.g.
// `filters[1].any[0]: unknown dialect "regex"`.
func ParseFilters(raw []byte) ([]Filter, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, Errorf(EINVALID, "filters: must be a list of filter expressions")
	}
	if len(list) == 0 {
		return nil, nil
	}
	p := filterParser{}
	out := make([]Filter, len(list))
	for i, item := range list {
		f, err := p.parse(item, fmt.Sprintf("filters[%d]", i), 1)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}

type filterParser struct{ count int }

func (p *filterParser) parse(raw json.RawMessage, path string, depth int) (Filter, error) {
	p.count++
	if p.count > MaxFilterExpressions {
		return Filter{}, Errorf(EINVALID, "%s: more than %d filter expressions in all", path, MaxFilterExpressions)
	}
	if depth > MaxFilterDepth {
		return Filter{}, Errorf(EINVALID, "%s: filters nest at most %d levels deep", path, MaxFilterDepth)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return Filter{}, Errorf(EINVALID, "%s: must be an object with one dialect (exact, prefix, suffix, all, any, not)", path)
	}
	if len(obj) != 1 {
		return Filter{}, Errorf(EINVALID, "%s: must have exactly one dialect, has %d", path, len(obj))
	}
	var dialect string
	var body json.RawMessage
	for dialect, body = range obj {
	}
	sub := path + "." + dialect
	switch dialect {
	case FilterExact, FilterPrefix, FilterSuffix:
		var attrs map[string]json.RawMessage
		if err := json.Unmarshal(body, &attrs); err != nil || attrs == nil {
			return Filter{}, Errorf(EINVALID, "%s: must be an object of one attribute and its value", sub)
		}
		if len(attrs) != 1 {
			return Filter{}, Errorf(EINVALID, "%s: must name exactly one attribute, names %d", sub, len(attrs))
		}
		var name string
		var value json.RawMessage
		for name, value = range attrs {
		}
		if !ValidAttributeName(name) {
			return Filter{}, Errorf(EINVALID, "%s: attribute %s must be a lower-case CloudEvents attribute name ([a-z0-9], 1 to %d characters)",
				sub, quoteShort(name), MaxAttributeNameLen)
		}
		var v *string
		if err := json.Unmarshal(value, &v); err != nil || v == nil {
			return Filter{}, Errorf(EINVALID, "%s.%s: must be a string", sub, name)
		}
		if len(*v) > MaxFilterValueBytes {
			return Filter{}, Errorf(EINVALID, "%s.%s: at most %d bytes", sub, name, MaxFilterValueBytes)
		}
		if !PlainText(*v) {
			return Filter{}, Errorf(EINVALID, "%s.%s: must be valid UTF-8 without control characters", sub, name)
		}
		return Filter{Dialect: dialect, Attribute: name, Value: *v, ext: "ce-" + name}, nil
	case FilterAll, FilterAny:
		var items []json.RawMessage
		if err := json.Unmarshal(body, &items); err != nil || len(items) == 0 {
			return Filter{}, Errorf(EINVALID, "%s: must be a non-empty list of filter expressions", sub)
		}
		f := Filter{Dialect: dialect, Children: make([]Filter, len(items))}
		for i, item := range items {
			c, err := p.parse(item, fmt.Sprintf("%s[%d]", sub, i), depth+1)
			if err != nil {
				return Filter{}, err
			}
			f.Children[i] = c
		}
		return f, nil
	case FilterNot:
		c, err := p.parse(body, sub, depth+1)
		if err != nil {
			return Filter{}, err
		}
		return Filter{Dialect: dialect, Children: []Filter{c}}, nil
	}
	return Filter{}, Errorf(EINVALID, "%s: unknown dialect %s", path, quoteShort(dialect))
}

// quoteShort quotes s for an error message: bounded, valid UTF-8 without
// control characters whatever s holds.
func quoteShort(s string) string {
	if len(s) > 64 {
		return fmt.Sprintf("%q...", s[:64])
	}
	return fmt.Sprintf("%q", s)
}

// ValidAttributeName reports whether name follows the CloudEvents attribute
// naming rule: 1 to 20 characters of [a-z0-9].
func ValidAttributeName(name string) bool {
	if name == "" || len(name) > MaxAttributeNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// MarshalJSON writes the expression in its CloudEvents form, e.g.
// {"exact":{"subject":"acc-1"}} or {"not":{...}}.
func (f Filter) MarshalJSON() ([]byte, error) {
	var v any
	switch f.Dialect {
	case FilterExact, FilterPrefix, FilterSuffix:
		v = map[string]map[string]string{f.Dialect: {f.Attribute: f.Value}}
	case FilterAll, FilterAny:
		children := f.Children
		if children == nil {
			children = []Filter{}
		}
		v = map[string][]Filter{f.Dialect: children}
	case FilterNot:
		if len(f.Children) != 1 {
			return nil, fmt.Errorf("filter: not holds %d expressions, want 1", len(f.Children))
		}
		v = map[string]Filter{f.Dialect: f.Children[0]}
	default:
		return nil, fmt.Errorf("filter: unknown dialect %q", f.Dialect)
	}
	return json.Marshal(v)
}

// MatchFilters reports whether ev satisfies every filter (true when there
// are none).
func MatchFilters(filters []Filter, ev *Event) bool {
	for i := range filters {
		if !filters[i].Match(ev) {
			return false
		}
	}
	return true
}

// Match reports whether ev satisfies the expression. An attribute the event
// lacks satisfies no exact, prefix or suffix (so a not of one holds).
func (f *Filter) Match(ev *Event) bool {
	switch f.Dialect {
	case FilterExact, FilterPrefix, FilterSuffix:
		v, ok := f.attribute(ev)
		if !ok {
			return false
		}
		switch f.Dialect {
		case FilterExact:
			return v == f.Value
		case FilterPrefix:
			return strings.HasPrefix(v, f.Value)
		default:
			return strings.HasSuffix(v, f.Value)
		}
	case FilterAll:
		for i := range f.Children {
			if !f.Children[i].Match(ev) {
				return false
			}
		}
		return true
	case FilterAny:
		for i := range f.Children {
			if f.Children[i].Match(ev) {
				return true
			}
		}
		return false
	case FilterNot:
		return len(f.Children) == 1 && !f.Children[0].Match(ev)
	}
	return false
}

func (f *Filter) attribute(ev *Event) (string, bool) {
	if v, ok, known := contextAttribute(ev, f.Attribute); known {
		return v, ok
	}
	key := f.ext
	if key == "" {
		key = "ce-" + f.Attribute
	}
	v, ok := ev.Extensions[key]
	return v, ok
}

// EventAttribute returns the context attribute name of ev as filters see
// it: the stored value and whether the event has one. Extensions are looked
// up by name without the ce- prefix.
func EventAttribute(ev *Event, name string) (string, bool) {
	if v, ok, known := contextAttribute(ev, name); known {
		return v, ok
	}
	v, ok := ev.Extensions["ce-"+name]
	return v, ok
}

// contextAttribute returns a CloudEvents context attribute the inbox keeps
// in a column of its own; known is false for any other name (an extension).
// An empty optional attribute is an absent one: ingest stores no other
// trace of it.
func contextAttribute(ev *Event, name string) (v string, ok, known bool) {
	switch name {
	case "id":
		v = ev.ID
	case "source":
		v = ev.Source
	case "subject":
		v = ev.Subject
	case "type":
		v = ev.Type
	case "tenantid":
		v = ev.TenantID
	case "schemaversion":
		v = ev.SchemaVersion
	case "dataschema":
		v = ev.DataSchema
	case "datacontenttype":
		v = ev.DataContentType
	case "specversion":
		v = ev.SpecVersion
	case "time":
		v = ev.Time
	default:
		return "", false, false
	}
	return v, v != "", true
}
