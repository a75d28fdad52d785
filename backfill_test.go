package hub

import (
	"strings"
	"testing"
	"time"
)

func TestValidateBackfillSince(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	week := 168 * time.Hour
	for _, c := range []struct {
		since time.Time
		want  time.Time
		err   string
	}{
		{since: now.Add(-time.Hour), want: now.Add(-time.Hour)},
		{since: now, want: now},
		{since: now.Add(-30 * 24 * time.Hour), want: now.Add(-week)}, // clamped to the horizon
		{since: now.Add(time.Second), err: "backfill.since: 2026-11-30T12:00:01Z is in the future"},
		{err: "backfill.since: required"},
	} {
		got, err := ValidateBackfillSince(c.since, now, week)
		if c.err != "" {
			if err == nil || ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), c.err) {
				t.Errorf("since %v: error %v, want %q", c.since, err, c.err)
			}
			continue
		}
		if err != nil || !got.Equal(c.want) {
			t.Errorf("since %v = %v, %v; want %v", c.since, got, err, c.want)
		}
	}
}
