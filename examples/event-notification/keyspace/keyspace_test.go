package keyspace_test

import (
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/keyspace"
)

func TestLayoutKeysShareOneHashTag(t *testing.T) {
	t.Parallel()
	l, err := keyspace.New("demo-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{l.Payment("p1"), l.Stream(), l.DeadLetter(), l.ApprovalsDay("2026-11-30")} {
		if !strings.HasPrefix(k, "{demo-1}:") {
			t.Errorf("key %q is outside the {demo-1} hash tag", k)
		}
	}
	if l.DeadLetter() != l.Stream()+".dlq" {
		t.Errorf("dead letter %q", l.DeadLetter())
	}
	for _, bad := range []string{"", "a}b", "a*", "a b", strings.Repeat("x", 129)} {
		if _, err := keyspace.New(bad); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
}
