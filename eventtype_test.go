package hub_test

import (
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
)

// One notation for a versioned event type: type@major is written, and
// type:major (the CLI's former notation) is read too.
func TestEventTypeRef_OneNotationWrittenBothRead(t *testing.T) {
	if s := (hub.EventTypeRef{Type: "transaction.posted", SchemaMajor: 2}).String(); s != "transaction.posted@2" {
		t.Fatalf("String() = %q", s)
	}
	for in, want := range map[string]hub.EventTypeRef{
		"transaction.posted@2":         {Type: "transaction.posted", SchemaMajor: 2},
		"transaction.posted:2":         {Type: "transaction.posted", SchemaMajor: 2},
		"transaction.posted":           {Type: "transaction.posted", SchemaMajor: 1},
		" transaction.posted@3 ":       {Type: "transaction.posted", SchemaMajor: 3},
		"hub.delivery.dead_lettered@1": {Type: "hub.delivery.dead_lettered", SchemaMajor: 1},
	} {
		got, err := hub.ParseEventTypeRef(in)
		if err != nil || got != want {
			t.Errorf("ParseEventTypeRef(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if err == nil && in != "transaction.posted" && in != "transaction.posted:2" {
			if back, _ := hub.ParseEventTypeRef(got.String()); back != got {
				t.Errorf("%q does not read back", got.String())
			}
		}
	}
	for _, bad := range []string{"", "@1", "transaction.posted@", "transaction.posted@x", "transaction.posted:0", "transaction.posted@-1"} {
		if _, err := hub.ParseEventTypeRef(bad); err == nil {
			t.Errorf("ParseEventTypeRef(%q) accepted", bad)
		}
	}
}
