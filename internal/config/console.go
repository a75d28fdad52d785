package config

import (
	"fmt"
	"strings"
)

// CheckFrameAncestors accepts a CSP frame-ancestors source list: 'none'
// alone, or sources such as 'self', https://app.example.com,
// https://*.example.com or https:. Nothing that could end the directive or
// the header (;, commas, quotes, control characters) gets through.
func CheckFrameAncestors(v string) error {
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return fmt.Errorf("empty: give 'none', 'self' or origins such as https://app.example.com")
	}
	for _, f := range fields {
		switch {
		case f == "'none'" && len(fields) == 1, f == "'self'":
		case f == "'none'":
			return fmt.Errorf("'none' must stand alone")
		case strings.ContainsAny(f, ";,'\\\"") || strings.IndexFunc(f, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0:
			return fmt.Errorf("%q is not a source: use 'self' or origins such as https://app.example.com", f)
		case f == "https:" || f == "http:" || strings.HasPrefix(f, "https://") || strings.HasPrefix(f, "http://"):
		default:
			return fmt.Errorf("%q is not a source: use 'self' or origins such as https://app.example.com", f)
		}
	}
	return nil
}
