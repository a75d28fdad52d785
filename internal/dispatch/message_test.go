package dispatch

import (
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/destination"
)

// An event signed by a producer key is delivered with X-Lerian-Producer-Key
// (webhooks, and broker destinations, which carry X-Lerian-* as headers);
// an unsigned one without it. The producer's ce-sig* headers travel on as
// extensions (docs/lerian-platform.md).
func TestEventHeaders_ProducerKey(t *testing.T) {
	ev := hub.Event{ID: "e", TenantID: "acme", ProducerKeyID: "k1",
		Extensions: map[string]string{"ce-sig": "v1.x", "ce-sigkid": "k1", "ce-sigts": "2026-09-26T12:00:05Z"}}
	h := destination.EventHeaders(ev, "att_1", "")
	if got := h.Get("X-Lerian-Producer-Key"); got != "k1" {
		t.Fatalf("X-Lerian-Producer-Key = %q", got)
	}
	broker := map[string]string{}
	for k, v := range (destination.Message{Headers: h}).BrokerHeaders() {
		broker[k] = v
	}
	if broker["X-Lerian-Producer-Key"] != "k1" || broker["ce-sig"] != "v1.x" || broker["ce-sigkid"] != "k1" || broker["ce-sigts"] != "2026-09-26T12:00:05Z" {
		t.Fatalf("broker headers %v", broker)
	}
	ev.ProducerKeyID = ""
	if _, ok := destination.EventHeaders(ev, "att_2", "")["X-Lerian-Producer-Key"]; ok {
		t.Fatal("an unsigned event names a producer key")
	}
}
