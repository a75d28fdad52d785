package hub

import (
	"fmt"
	"net/url"
	"strings"
)

// TopicNamespace prefixes every topic the hub reads.
const TopicNamespace = "lerian.streaming."

// DefaultTopicsRegex is what the hub subscribes to unless
// STREAMING_HUB_KAFKA_TOPICS_REGEX says otherwise. Topics ending in .commands
// or .dlq are excluded separately (Go's regexp has no negative look-ahead).
const DefaultTopicsRegex = `^lerian\.streaming\..+`

// ExcludedTopic reports whether a topic is never consumed, whatever the regex
// says: command and dead-letter topics share the namespace but are not events.
func ExcludedTopic(topic string) bool {
	return strings.HasSuffix(topic, ".commands") || strings.HasSuffix(topic, ".dlq")
}

// CEType is a parsed ce-type: studio.lerian.<resource>.<event>, or the
// five-segment studio.lerian.<source>.<resource>.<event>.
type CEType struct {
	Source   string // the optional producer segment; "" in the four-segment form
	Resource string
	Event    string
}

// EventType is what subscriptions match and X-Lerian-Event-Type carries:
// <resource>.<event>, never a topic and never a service segment.
func (t CEType) EventType() string { return t.Resource + "." + t.Event }

// MaxCETypeLen bounds ce-type.
const MaxCETypeLen = 256

// ParseCEType parses a ce-type. Segments are [a-z0-9_-]+.
func ParseCEType(s string) (CEType, error) {
	if len(s) > MaxCETypeLen {
		return CEType{}, fmt.Errorf("longer than %d bytes", MaxCETypeLen)
	}
	parts := strings.Split(s, ".")
	if len(parts) < 4 || len(parts) > 5 || parts[0] != "studio" || parts[1] != "lerian" {
		return CEType{}, fmt.Errorf("not of the form studio.lerian.<resource>.<event>")
	}
	for _, p := range parts[2:] {
		if !validSegment(p) {
			return CEType{}, fmt.Errorf("segment %q is not [a-z0-9_-]+", p)
		}
	}
	if len(parts) == 5 {
		return CEType{Source: parts[2], Resource: parts[3], Event: parts[4]}, nil
	}
	return CEType{Resource: parts[2], Event: parts[3]}, nil
}

// ParseEventType parses the <resource>.<event> form used by subscriptions,
// and the hub's own hub.<resource>.<event> (operational events, whose
// resource it returns as hub.<resource>).
func ParseEventType(s string) (resource, event string, err error) {
	if rest, ok := strings.CutPrefix(s, OperationalPrefix); ok {
		if r, e, ok := strings.Cut(rest, "."); ok && validSegment(r) && validSegment(e) {
			return OperationalPrefix + r, e, nil
		}
		return "", "", fmt.Errorf("%q is not of the form hub.<resource>.<event> with segments [a-z0-9_-]+", s)
	}
	resource, event, ok := strings.Cut(s, ".")
	if !ok || !validSegment(resource) || !validSegment(event) {
		return "", "", fmt.Errorf("%q is not of the form <resource>.<event> with segments [a-z0-9_-]+", s)
	}
	return resource, event, nil
}

func validSegment(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Topic returns the Kafka topic a producer namespace (service) publishes
// ceType on: lerian.streaming.<service>_<resource>.<event>, every '-' turned
// into '_'. Midaz ledger events use service "ledger":
//
//	Topic("ledger", "studio.lerian.balance.config-changed")
//	// lerian.streaming.ledger_balance.config_changed
func Topic(service, ceType string) (string, error) {
	if !validSegment(service) {
		return "", fmt.Errorf("service %q is not [a-z0-9_-]+", service)
	}
	t, err := ParseCEType(ceType)
	if err != nil {
		return "", fmt.Errorf("ce-type %q: %w", ceType, err)
	}
	name := TopicNamespace + service + "_" + t.Resource + "." + t.Event
	return strings.ReplaceAll(name, "-", "_"), nil
}

// LedgerTopic is the Midaz rule: Topic("ledger", ceType).
func LedgerTopic(ceType string) (string, error) { return Topic("ledger", ceType) }

// ServiceFromSource derives a producer's namespace from its ce-source, for
// producers other than Midaz: the last path segment of a URI reference
// ("//lerian.studio/consignado" -> "consignado"), else the last colon-separated
// part of a URN ("urn:lerian:consignado"), else the first label of the host.
// The result is lower-cased with any character outside [a-z0-9_-] turned
// into '_'.
func ServiceFromSource(source string) (string, error) {
	name := ""
	if u, err := url.Parse(source); err == nil {
		if p := strings.Trim(u.Path, "/"); p != "" {
			name = p[strings.LastIndex(p, "/")+1:]
		} else if u.Opaque != "" {
			name = u.Opaque[strings.LastIndex(u.Opaque, ":")+1:]
		} else if h := u.Hostname(); h != "" {
			name, _, _ = strings.Cut(h, ".")
		}
	}
	if name == "" {
		name = source[strings.LastIndexAny(source, "/:")+1:]
	}
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "", fmt.Errorf("ce-source %q names no service", source)
	}
	return b.String(), nil
}

// TopicForSource is Topic(ServiceFromSource(source), ceType).
func TopicForSource(source, ceType string) (string, error) {
	svc, err := ServiceFromSource(source)
	if err != nil {
		return "", err
	}
	return Topic(svc, ceType)
}
