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
	if len(s) <= max && strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s // the usual case, without a copy
	}
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
	return cleanHeadersJSON(a.RequestHeaders, maxRequestHeaders, maxRequestHeaderValue),
		cleanHeadersJSON(a.ResponseHeaders, hub.MaxResponseHeaders, hub.MaxResponseHeaderValue)
}

// cleanHeadersJSON is headersJSON(CleanHeaders(h, max, maxValue)) in one
// pass over h's sorted names, without the cleaned copy: names are almost
// always clean already, and then they stay sorted and distinct. A name
// that cleaning changes takes the general path. Nil stays nil.
func cleanHeadersJSON(h map[string]string, max, maxValue int) *string {
	if h == nil {
		return nil
	}
	keys := slices.Sorted(maps.Keys(h))
	keys = keys[:min(len(keys), max)]
	n := 2
	for _, k := range keys {
		if CleanText(k, MaxRejectionNameBytes) != k {
			s := string(headersJSON(CleanHeaders(h, max, maxValue)))
			return &s
		}
		n += len(k) + min(len(h[k]), maxValue) + 6
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, CleanText(h[k], maxValue))
	}
	s := string(append(b, '}'))
	return &s
}

// headersJSON is json.Marshal(h), byte for byte, without its reflection:
// every attempt writes two of these, and on a busy hub encoding them cost
// as much CPU as the attempt's own request.
func headersJSON(h map[string]string) []byte {
	keys := slices.Sorted(maps.Keys(h))
	n := 2
	for _, k := range keys {
		n += len(k) + len(h[k]) + 6
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, h[k])
	}
	return append(b, '}')
}

// appendJSONString appends s as encoding/json writes it: plain ASCII with
// nothing to escape as is, anything else through encoding/json itself.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
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
