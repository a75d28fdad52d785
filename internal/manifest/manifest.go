// Package manifest reads producer manifests (lib-streaming's format,
// version 1.0.0), keeps each source's last good copy in the store, and
// builds the event catalog a tenant can subscribe from.
package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Manifest is what a producer serves at GET /v1/streaming/manifest.
type Manifest struct {
	Version   string    `json:"version"`
	Publisher Publisher `json:"publisher"`
	Topic     string    `json:"topic"`
	Events    []Event   `json:"events"`
}

// Publisher names the producer; other fields are kept by no one.
type Publisher struct {
	ServiceName string `json:"serviceName"`
	Source      string `json:"source"`
}

// Event is one event type a producer publishes.
type Event struct {
	Key             string `json:"key"`
	ResourceType    string `json:"resourceType"`
	EventType       string `json:"eventType"`
	SchemaVersion   string `json:"schemaVersion"`
	DataContentType string `json:"dataContentType"`
	DataSchema      string `json:"dataSchema"`
	SystemEvent     bool   `json:"systemEvent"`
	Description     string `json:"description"`
	Class           string `json:"class"`
}

// Type is the subscribable <resource>.<event>.
func (e Event) Type() string { return e.ResourceType + "." + e.EventType }

// Parse reads and checks a manifest: version 1.x.y, a publisher source,
// and each event a valid type with a MAJOR.MINOR.PATCH schema version.
func Parse(body []byte) (Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("not a manifest: %v", err)
	}
	if major, _, _ := strings.Cut(m.Version, "."); major != "1" {
		return Manifest{}, fmt.Errorf("version %q: only 1.x manifests are read", m.Version)
	}
	if m.Publisher.Source == "" {
		return Manifest{}, fmt.Errorf("publisher.source: required")
	}
	for i, e := range m.Events {
		if _, _, err := hub.ParseEventType(e.Type()); err != nil || strings.HasPrefix(e.Type(), hub.OperationalPrefix) {
			return Manifest{}, fmt.Errorf("events[%d]: resourceType and eventType must be [a-z0-9_-]+ (and not hub)", i)
		}
		if _, err := Major(e.SchemaVersion); err != nil {
			return Manifest{}, fmt.Errorf("events[%d].schemaVersion: %v", i, err)
		}
	}
	return m, nil
}

// Major is a MAJOR.MINOR.PATCH version's major.
func Major(v string) (int, error) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return 0, fmt.Errorf("%q is not MAJOR.MINOR.PATCH", v)
	}
	var out int
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not MAJOR.MINOR.PATCH", v)
		}
		if i == 0 {
			out = n
		}
	}
	return out, nil
}

// Entry is one event type of the catalog.
type Entry struct {
	Type         string     `json:"type"`
	SchemaMajors []int      `json:"schema_majors"`
	Source       string     `json:"source"`
	Description  string     `json:"description"`
	DataSchema   string     `json:"data_schema"`
	FirstSeenAt  *time.Time `json:"first_seen_at"`
	LastSeenAt   *time.Time `json:"last_seen_at"`
	InManifest   bool       `json:"in_manifest"`
}

// Catalog merges what a tenant received, the stored manifests' events
// (system events are not subscribable: left out) and the hub's own
// operational events, by type.
func Catalog(seen []store.TypeSeen, sources []store.ManifestSource) []Entry {
	byType := make(map[string]*Entry)
	entry := func(t string) *Entry {
		e := byType[t]
		if e == nil {
			e = &Entry{Type: t}
			byType[t] = e
		}
		return e
	}
	addMajor := func(e *Entry, m int) {
		for _, x := range e.SchemaMajors {
			if x == m {
				return
			}
		}
		e.SchemaMajors = append(e.SchemaMajors, m)
	}
	for _, src := range sources {
		if src.Manifest == nil {
			continue
		}
		m, err := Parse(src.Manifest)
		if err != nil {
			continue // stored only after it parsed; a later binary may read less
		}
		for _, ev := range m.Events {
			if ev.SystemEvent {
				continue
			}
			major, _ := Major(ev.SchemaVersion)
			e := entry(ev.Type())
			addMajor(e, major)
			e.InManifest = true
			e.Source = m.Publisher.Source
			if ev.Description != "" {
				e.Description = ev.Description
			}
			if ev.DataSchema != "" {
				e.DataSchema = ev.DataSchema
			}
		}
	}
	for _, s := range seen {
		e := entry(s.EventType)
		addMajor(e, s.SchemaMajor)
		if e.Source == "" {
			e.Source = s.Source
		}
		first, last := s.FirstSeenAt, s.LastSeenAt
		if e.FirstSeenAt == nil || first.Before(*e.FirstSeenAt) {
			e.FirstSeenAt = &first
		}
		if e.LastSeenAt == nil || last.After(*e.LastSeenAt) {
			e.LastSeenAt = &last
		}
	}
	for _, t := range hub.OperationalTypes {
		e := entry(t)
		addMajor(e, 1)
		e.Source, e.Description = hub.OperationalSource, hub.OperationalDescriptions[t]
	}
	out := make([]Entry, 0, len(byType))
	for _, e := range byType {
		sort.Ints(e.SchemaMajors)
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// Warnings are what a subscription's event types get that the catalog does
// not know: creating it still succeeds, but a typo shows.
func Warnings(refs []hub.EventTypeRef, catalog []Entry) []string {
	known := make(map[string][]int, len(catalog))
	for _, e := range catalog {
		known[e.Type] = e.SchemaMajors
	}
	var out []string
	for _, r := range refs {
		majors, ok := known[r.Type]
		switch {
		case !ok:
			out = append(out, r.Type+": no manifest lists it and no event carried it")
		case !containsInt(majors, r.SchemaMajor):
			out = append(out, fmt.Sprintf("%s: schema major %d is in no manifest and on no event (known: %v)", r.Type, r.SchemaMajor, majors))
		}
	}
	return out
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
