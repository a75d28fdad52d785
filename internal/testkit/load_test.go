package testkit

import (
	"testing"
	"time"
)

func TestLoadFactor_IsTheLoadOverTheCPUsAndAtLeastOne(t *testing.T) {
	for _, c := range []struct {
		loadavg string
		cpus    int
		want    float64
	}{
		{"0.44 1.05 0.56 1/175 18747\n", 2, 1},
		{"2.00 1.00 1.00 1/175 1\n", 2, 1},
		{"52.00 40.00 30.00 9/400 1\n", 2, 26},
		{"16.5 1 1 1/1 1", 4, 4.125},
		{"", 2, 1},
		{"garbage", 2, 1},
		{"8 8 8", 0, 1},
	} {
		if got := loadFactor(c.loadavg, c.cpus); got != c.want {
			t.Errorf("loadFactor(%q, %d) = %v, want %v", c.loadavg, c.cpus, got, c.want)
		}
	}
	if f := LoadFactor(); f < 1 {
		t.Fatalf("LoadFactor() = %v on this machine, below 1", f)
	}
}

func TestScaled_StretchesWithTheLoadUpToPatience(t *testing.T) {
	for _, c := range []struct {
		d      time.Duration
		factor float64
		want   time.Duration
	}{
		{3 * time.Second, 1, 3 * time.Second},
		{3 * time.Second, 25, 75 * time.Second},
		{10 * time.Second, 26, Patience},      // capped: longer is a hang
		{5 * time.Minute, 3, 5 * time.Minute}, // already past Patience: kept as it is
	} {
		if got := scaled(c.d, c.factor); got != c.want {
			t.Errorf("scaled(%v, %v) = %v, want %v", c.d, c.factor, got, c.want)
		}
	}
	if d := Scaled(time.Second); d < time.Second || d > Patience {
		t.Fatalf("Scaled(1s) = %v here", d)
	}
}
