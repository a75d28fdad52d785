// Package human writes values as a person reads them, the same in the
// console and the CLI: durations in the unit that fits ("<1 ms" is the
// console's words for an attempt the API rounds to 0 ms).
package human

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration writes d with the units a person reads: "0.4 ms", "340 ms",
// "1.2 s", "42 s", "3 min 59 s", "2 h 5 min", "3 d 4 h".
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
	}
	switch {
	case d < time.Millisecond:
		return trimZero(strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)) + " ms"
	case d < time.Second-time.Millisecond/2:
		return strconv.FormatInt(int64(d.Round(time.Millisecond)/time.Millisecond), 10) + " ms"
	case d < 10*time.Second-50*time.Millisecond:
		return trimZero(strconv.FormatFloat(d.Seconds(), 'f', 1, 64)) + " s"
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	case d < time.Hour:
		return two(int64(d/time.Minute), "min", int64(d%time.Minute/time.Second), "s")
	}
	d = d.Round(time.Minute)
	if d < 24*time.Hour {
		return two(int64(d/time.Hour), "h", int64(d%time.Hour/time.Minute), "min")
	}
	d = d.Round(time.Hour)
	return two(int64(d/(24*time.Hour)), "d", int64(d%(24*time.Hour)/time.Hour), "h")
}

// Millis writes a number of milliseconds as the API gives them
// (duration_ms, latency_ms, p99_ms) as Duration does; the API writes whole
// milliseconds, so 0 is an attempt that took less than one: "<1 ms".
func Millis(ms float64) string {
	if ms == 0 {
		return "<1 ms"
	}
	return Duration(time.Duration(ms * float64(time.Millisecond)))
}

// two writes "3 min 59 s", or "3 min" when the smaller unit is 0.
func two(big int64, bigUnit string, small int64, smallUnit string) string {
	if small == 0 {
		return fmt.Sprintf("%d %s", big, bigUnit)
	}
	return fmt.Sprintf("%d %s %d %s", big, bigUnit, small, smallUnit)
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }
