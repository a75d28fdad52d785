package store

import (
	"encoding/json"
	"testing"
)

// headersJSON writes what json.Marshal writes, byte for byte, for every
// map of clean headers: plain, escaped, HTML-ish, control characters,
// non-ASCII, empty.
func TestHeadersJSON_IsJSONMarshalsOutput(t *testing.T) {
	for _, h := range []map[string]string{
		{},
		{"Content-Type": "application/json", "Webhook-Id": "evt-1", "X-Empty": ""},
		{"A": `quote " and back\slash`, "B": "<script>&amp;</script>", "C": "tab\tnew\nline\x01", "D": "ünï € \u2028 \u2029 😀"},
		{"\uFFFDbad": "\uFFFD", "z": "last", "0": "first"},
	} {
		want, _ := json.Marshal(h)
		if got := headersJSON(h); string(got) != string(want) {
			t.Errorf("headersJSON(%q) = %s, want %s", h, got, want)
		}
	}
}

func FuzzHeadersJSON(f *testing.F) {
	f.Add("Content-Type", "application/json", "X", "<&>\"\\\n")
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string) {
		h := CleanHeaders(map[string]string{k1: v1, k2: v2}, 8, 256)
		want, _ := json.Marshal(h)
		if got := headersJSON(h); string(got) != string(want) {
			t.Fatalf("headersJSON(%q) = %s, want %s", h, got, want)
		}
	})
}

func BenchmarkAttemptHeaders(b *testing.B) {
	h := map[string]string{"Content-Type": "application/json", "Webhook-Id": "evt-1", "Webhook-Timestamp": "1764000000",
		"Webhook-Signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=", "User-Agent": "streaming-hub/dev", "Ce-Id": "evt-1",
		"Ce-Type": "studio.lerian.transaction.posted", "Ce-Source": "//midaz/ledger", "X-Lerian-Tenant-Id": "acme"}
	for b.Loop() {
		headersJSON(CleanHeaders(h, 128, 4096))
	}
}
