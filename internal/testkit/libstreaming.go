package testkit

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// LibEvent is an event as Lerian's producer library, lib-streaming v3,
// takes it; LibRecord turns it into the record the library publishes.
type LibEvent struct {
	ID                      string
	Source                  string // one lower-case segment, such as ledger: the application
	ResourceType, EventType string // transaction, created
	Time                    time.Time
	SchemaVersion           string
	// Optional, sent only when set.
	Subject, DataContentType, DataSchema, TenantID string
	SystemEvent                                    bool // ce-systemevent: true, no tenant
	TraceParent, TraceState                        string
	Payload                                        []byte
}

// LibRecord is the record lib-streaming v3 publishes for e, byte for byte:
// its topic lerian.streaming.<source>, its key (the tenant, or
// system:<eventType> for a system event), and its headers in the
// library's order: ce-specversion, ce-id, ce-source, ce-type (the
// five-segment studio.lerian.<source>.<resource>.<event>), ce-time (RFC
// 3339 with nanoseconds), ce-schemaversion, ce-resourcetype, ce-eventtype;
// then, when set, ce-subject, ce-datacontenttype, ce-dataschema,
// ce-tenantid; ce-systemevent: true on a system event; then the W3C trace
// context its OpenTelemetry propagator adds.
func LibRecord(e LibEvent) *kgo.Record {
	h := func(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }
	hs := []kgo.RecordHeader{
		h("ce-specversion", "1.0"),
		h("ce-id", e.ID),
		h("ce-source", e.Source),
		h("ce-type", "studio.lerian."+e.Source+"."+e.ResourceType+"."+e.EventType),
		h("ce-time", e.Time.Format(time.RFC3339Nano)),
		h("ce-schemaversion", e.SchemaVersion),
		h("ce-resourcetype", e.ResourceType),
		h("ce-eventtype", e.EventType),
	}
	for _, opt := range []struct{ k, v string }{
		{"ce-subject", e.Subject}, {"ce-datacontenttype", e.DataContentType},
		{"ce-dataschema", e.DataSchema}, {"ce-tenantid", e.TenantID},
	} {
		if opt.v != "" {
			hs = append(hs, h(opt.k, opt.v))
		}
	}
	key := e.TenantID
	if e.SystemEvent {
		hs = append(hs, h("ce-systemevent", "true"))
		key = "system:" + e.EventType
	}
	if e.TraceParent != "" {
		hs = append(hs, h("traceparent", e.TraceParent))
	}
	if e.TraceState != "" {
		hs = append(hs, h("tracestate", e.TraceState))
	}
	return &kgo.Record{Topic: "lerian.streaming." + e.Source, Key: []byte(key), Value: e.Payload, Headers: hs}
}

// LibFact is a tenant's fact as lib-streaming v3 publishes it:
// studio.lerian.ledger.transaction.created with every optional attribute
// and a trace context.
func LibFact(tenant, id string) LibEvent {
	return LibEvent{
		ID: id, Source: "ledger", ResourceType: "transaction", EventType: "created",
		Time:          time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC),
		SchemaVersion: "1.2.0",
		Subject:       "transaction/" + id, DataContentType: "application/json",
		DataSchema:  "https://schemas.lerian.studio/ledger/transaction.created/1.2.0.json",
		TenantID:    tenant,
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		TraceState:  "lerian=ledger",
		Payload:     []byte(`{"id":"` + id + `","amount":"10.00"}`),
	}
}

// LibSystemEvent is a system event as lib-streaming v3 publishes it: no
// tenant, ce-systemevent: true, keyed system:<eventType>.
func LibSystemEvent(id string) LibEvent {
	return LibEvent{
		ID: id, Source: "ledger", ResourceType: "ledger", EventType: "maintenance-scheduled",
		Time:          time.Date(2026, 11, 30, 12, 0, 1, 5, time.UTC),
		SchemaVersion: "1.0.0", DataContentType: "application/json", SystemEvent: true,
		TraceParent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		Payload:     []byte(`{"window":"2026-12-01T02:00:00Z"}`),
	}
}
