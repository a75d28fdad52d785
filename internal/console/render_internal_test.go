package console

import (
	"testing"
	"time"
)

func TestRelative_SaysHowLongAgoOrHenceInTheLargestUnit(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "just now"},
		{-400 * time.Millisecond, "just now"},
		{42 * time.Second, "42 s ago"},
		{-5 * time.Second, "in 5 s"},
		{3*time.Minute + 59*time.Second, "3 min ago"},
		{-90 * time.Minute, "in 1 h"},
		{47 * time.Hour, "47 h ago"},
		{12 * 24 * time.Hour, "12 d ago"},
		{90 * 24 * time.Hour, "2026-09-01"},
	} {
		if got := relative(now.Add(-c.d), now); got != c.want {
			t.Errorf("%v before now: %q, want %q", c.d, got, c.want)
		}
	}
}

func TestTimeTag_RelativeTextExactTimeOnHover(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   any
		want string
	}{
		{"2026-11-30T11:57:00Z", `<time datetime="2026-11-30T11:57:00Z" title="2026-11-30T11:57:00Z">3 min ago</time>`},
		{"2026-11-30T12:00:05.250Z", `<time datetime="2026-11-30T12:00:05.250Z" title="2026-11-30T12:00:05.250Z">in 5 s</time>`},
		{"2026-11-30T13:00:00+01:00", `<time datetime="2026-11-30T12:00:00Z" title="2026-11-30T12:00:00Z">just now</time>`},
		{now.Add(-time.Hour), `<time datetime="2026-11-30T11:00:00Z" title="2026-11-30T11:00:00Z">1 h ago</time>`},
		{"", "—"},
		{nil, "—"},
		{(*time.Time)(nil), "—"},
		{`<b>soon</b>`, "&lt;b&gt;soon&lt;/b&gt;"},
	} {
		if got := string(timeTag(c.in, now)); got != c.want {
			t.Errorf("timeTag(%v) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestDTLocal_WhatADatetimeLocalInputShows(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "",
		"2026-11-30T11:30":          "2026-11-30T11:30",
		"2026-11-30T11:30:15":       "2026-11-30T11:30:15",
		"2026-11-30T13:30:15+02:00": "2026-11-30T11:30:15",
		"tomorrow":                  "",
	} {
		if got := dtLocal(in); got != want {
			t.Errorf("dtLocal(%q) = %q, want %q", in, got, want)
		}
	}
}
