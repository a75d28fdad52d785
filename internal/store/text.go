package store

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	hub "github.com/lerianstudio/streaming-hub"
)

// CleanText makes s storable in any text column of either database: valid
// UTF-8 (invalid bytes become U+FFFD), no NUL (PostgreSQL refuses it in
// text; it becomes U+FFFD too), and at most max bytes, cut on a rune
// boundary. Other characters are kept as they came: a response body or an
// error is shown as the destination wrote it.
func CleanText(s string, max int) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// CleanHeaders is h bounded for storage: at most max headers (the first
// by name), each name clean text (CleanText) of at most
// MaxRejectionNameBytes and each value of at most maxValue bytes. Nil
// stays nil.
func CleanHeaders(h map[string]string, max, maxValue int) map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, min(len(h), max))
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if len(out) == max {
			break
		}
		ck := CleanText(k, MaxRejectionNameBytes)
		if _, dup := out[ck]; !dup {
			out[ck] = CleanText(h[k], maxValue)
		}
	}
	return out
}

// Bounds on the request headers an attempt's log keeps: generous (the hub
// wrote them), but a row stays a row.
const (
	maxRequestHeaders     = 128
	maxRequestHeaderValue = 4096
)

// AttemptHeaders are a's request and response headers as every driver
// stores them: JSON objects of clean text, bounded (responses as
// hub.MaxResponseHeaders and hub.MaxResponseHeaderValue say); nil (NULL)
// when a has none.
func AttemptHeaders(a *hub.Attempt) (request, response *string) {
	enc := func(h map[string]string) *string {
		if h == nil {
			return nil
		}
		b, _ := json.Marshal(h) // a map of strings always encodes
		s := string(b)
		return &s
	}
	return enc(CleanHeaders(a.RequestHeaders, maxRequestHeaders, maxRequestHeaderValue)),
		enc(CleanHeaders(a.ResponseHeaders, hub.MaxResponseHeaders, hub.MaxResponseHeaderValue))
}

// DecodeHeaders reads a column AttemptHeaders wrote; NULL (or anything
// unreadable, which the hub never writes) is nil.
func DecodeHeaders(s *string) map[string]string {
	if s == nil {
		return nil
	}
	var h map[string]string
	if json.Unmarshal([]byte(*s), &h) != nil {
		return nil
	}
	return h
}
