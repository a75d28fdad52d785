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

// headersJSON and the one-pass cleanHeadersJSON write what json.Marshal
// writes of the cleaned headers, names cleaning changes (bad UTF-8, NUL,
// too long, colliding) and the cut at max included.
func FuzzHeadersJSON(f *testing.F) {
	f.Add("Content-Type", "application/json", "X", "<&>\"\\\n", "Z", "z", 3)
	f.Add("a\x00", "v", "a\uFFFD", "w", "b\xff", "x", 2)
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2, k3, v3 string, max int) {
		max = 1 + (max%4+4)%4
		raw := map[string]string{k1: v1, k2: v2, k3: v3}
		h := CleanHeaders(raw, max, 16)
		want, _ := json.Marshal(h)
		if got := headersJSON(h); string(got) != string(want) {
			t.Fatalf("headersJSON(%q) = %s, want %s", h, got, want)
		}
		if got := cleanHeadersJSON(raw, max, 16); got == nil || *got != string(want) {
			t.Fatalf("cleanHeadersJSON(%q, %d) = %v, want %s", raw, max, got, want)
		}
	})
}

func BenchmarkAttemptHeaders(b *testing.B) {
	h := map[string]string{"Content-Type": "application/json", "Webhook-Id": "evt-1", "Webhook-Timestamp": "1764000000",
		"Webhook-Signature": "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=", "User-Agent": "streaming-hub/dev", "Ce-Id": "evt-1",
		"Ce-Type": "studio.lerian.transaction.posted", "Ce-Source": "//midaz/ledger", "X-Lerian-Tenant-Id": "acme"}
	for b.Loop() {
		cleanHeadersJSON(h, 128, 4096)
	}
}
