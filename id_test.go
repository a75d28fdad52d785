package hub_test

import (
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

func TestNewID_SortsByTimeAndIncreasesWithinAMillisecond(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	prev := hub.NewID("x", t0)
	for i := range 1000 {
		at := t0
		if i%100 == 99 {
			at = t0.Add(-time.Hour) // a clock that steps back
		}
		id := hub.NewID("x", at)
		if id <= prev || !strings.HasPrefix(id, "x_") || len(id) != 34 {
			t.Fatalf("id %d = %s after %s", i, id, prev)
		}
		prev = id
	}
	if later := hub.NewID("x", t0.Add(time.Second)); later <= prev {
		t.Fatal("a later millisecond sorted earlier")
	}
}
