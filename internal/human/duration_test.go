package human

import (
	"testing"
	"time"
)

func TestDuration_UnitsPeopleRead(t *testing.T) {
	for d, want := range map[time.Duration]string{
		400 * time.Microsecond:                      "0.4 ms",
		340 * time.Millisecond:                      "340 ms",
		999*time.Millisecond + 700*time.Microsecond: "1 s",
		1200 * time.Millisecond:                     "1.2 s",
		42 * time.Second:                            "42 s",
		3*time.Minute + 58551*time.Millisecond:      "3 min 59 s",
		5 * time.Minute:                             "5 min",
		2*time.Hour + 5*time.Minute:                 "2 h 5 min",
		3*24*time.Hour + 4*time.Hour:                "3 d 4 h",
		0:                                           "0 ms",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestMillis_TheAPIsWholeMillisecondsAsDurations(t *testing.T) {
	for ms, want := range map[float64]string{0: "<1 ms", 1: "1 ms", 64: "64 ms", 412.5: "413 ms", 1200: "1.2 s", 239000: "3 min 59 s"} {
		if got := Millis(ms); got != want {
			t.Errorf("Millis(%v) = %q, want %q", ms, got, want)
		}
	}
}
