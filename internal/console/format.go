package console

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/human"
)

// How the console writes durations and numbers, in one place: every page
// and chart goes through these, so "340 ms" and "12,345" read the same
// everywhere.

// duration writes d with the units a person reads ("0.4 ms", "340 ms",
// "1.2 s", "3 min 59 s"), as the CLI's listen does: one formatter for both.
func duration(d time.Duration) string { return human.Duration(d) }

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }

// millis writes a number of milliseconds as the API gives them (latency_ms,
// duration_ms) as a duration; "—" for none.
func millis(v any) string {
	f, ok := toFloat(v)
	if !ok {
		return "—"
	}
	return human.Millis(f)
}

// number writes a count with thousands separators ("12,345") and other
// values with at most two decimals ("0.25", "1,234.5").
func number(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "—"
	}
	neg := f < 0
	f = math.Abs(f)
	s := strconv.FormatFloat(f, 'f', 2, 64)
	s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if neg && s != "0" {
		b.WriteByte('-')
	}
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

// compact writes a number short, for axes and rates: "<0.01", "0.048",
// "1.5", "12", "950", "1.2k", "45k", "3.4M".
func compact(f float64) string {
	a := math.Abs(f)
	switch {
	case a >= 1e9:
		return short(f/1e9) + "G"
	case a >= 1e6-5e4:
		return short(f/1e6) + "M"
	case a >= 1e3-5:
		return short(f/1e3) + "k"
	case a == 0:
		return "0"
	case a < 0.01:
		if f < 0 {
			return "-<0.01"
		}
		return "<0.01"
	case a < 1:
		return strconv.FormatFloat(f, 'g', 2, 64) // 0.048, 0.5
	case a < 10:
		return trimZero(strconv.FormatFloat(f, 'f', 1, 64))
	}
	return strconv.FormatFloat(math.Round(f), 'f', 0, 64)
}

// short writes one decimal below 10 ("1.2") and none above ("45").
func short(f float64) string {
	if math.Abs(f) < 9.95 {
		return trimZero(strconv.FormatFloat(f, 'f', 1, 64))
	}
	return strconv.FormatFloat(math.Round(f), 'f', 0, 64)
}

// perMinute writes a rate per minute: "1.2k/min", "0.5/min".
func perMinute(v any) string {
	f, ok := toFloat(v)
	if !ok {
		return "—"
	}
	return compact(f) + "/min"
}

// plural writes a count with its noun: "1 delivery", "12,345 deliveries".
func plural(v any, one, many string) string {
	f, ok := toFloat(v)
	if !ok {
		return "— " + many
	}
	if f == 1 {
		return "1 " + one
	}
	return number(f) + " " + many
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case *float64:
		if x != nil {
			return *x, true
		}
	}
	return 0, false
}
