package store

import (
	"strings"
	"unicode/utf8"
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
