package console

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// health is a health answer of n buckets of width from start, with attempts
// in the buckets named.
func health(start time.Time, width time.Duration, n int, attempts map[int][2]float64) m {
	var bs []any
	for i := range n {
		b := map[string]any{"start": start.Add(time.Duration(i) * width).Format(time.RFC3339), "successes": 0.0, "failures": 0.0, "p99_ms": nil}
		if a, ok := attempts[i]; ok {
			b["successes"], b["failures"], b["p99_ms"] = a[0], a[1], 340.0
		}
		bs = append(bs, b)
	}
	return m{"bucket_seconds": width.Seconds(), "buckets": bs}
}

var (
	titleRE = regexp.MustCompile(`<g class="bucket"><title>([^<]*)</title>`)
	xTickRE = regexp.MustCompile(`<text class="tick x(?: minor)?" [^>]*>([^<]*)</text>`)
	yTickRE = regexp.MustCompile(`<text class="tick y" [^>]*>([^<]*)</text>`)
)

func TestHealthChart_EachBarHasItsHoverValueAndTheAxesAreLabelled(t *testing.T) {
	start := time.Date(2026, 12, 2, 13, 5, 0, 0, time.UTC)
	svg := string(healthChart(health(start, 5*time.Minute, 13, map[int][2]float64{12: {120, 3}, 11: {40, 0}}), time.Hour))

	titles := titleRE.FindAllStringSubmatch(svg, -1)
	if len(titles) != 13 {
		t.Fatalf("%d bucket titles, want one per bucket (13):\n%s", len(titles), svg)
	}
	if got := titles[12][1]; got != "14:05–14:10: 120 delivered, 3 failed, p99 340 ms" {
		t.Errorf("last bucket's title %q", got)
	}
	if got := titles[0][1]; got != "13:05–13:10: no attempts" {
		t.Errorf("first bucket's title %q", got)
	}
	if n := strings.Count(svg, `class="fail"`); n != 1 {
		t.Errorf("%d failure rects, want the last bucket's", n)
	}
	var xs []string
	for _, x := range xTickRE.FindAllStringSubmatch(svg, -1) {
		xs = append(xs, x[1])
	}
	if len(xs) < 3 || len(xs) > 8 || xs[0] != "13:10" || !regexp.MustCompile(`^\d\d:\d\d$`).MatchString(xs[len(xs)-1]) {
		t.Errorf("x ticks %v: want a handful of times, not every bucket", xs)
	}
	var ys []string
	for _, y := range yTickRE.FindAllStringSubmatch(svg, -1) {
		ys = append(ys, y[1])
	}
	if strings.Join(ys, " ") != "0 50 100 150" {
		t.Errorf("y ticks %v, want 0 50 100 150 for a tallest bar of 123", ys)
	}
	// The plot takes the box's width; the axes' labels are placed by
	// percentages, so they keep their size; every other time label is
	// minor (hidden on a narrow screen).
	if !strings.HasPrefix(svg, `<div class="plot-area chart-health"><svg class="axis y-axis" aria-hidden="true">`) ||
		!strings.Contains(svg, `<svg class="plot" viewBox="0 0 1000 100" preserveAspectRatio="none" role="img" aria-label="Delivered and failed attempts per bucket"`) ||
		!strings.Contains(svg, `<text class="tick y" x="100%" dx="-6" y="0.00%" text-anchor="end"`) ||
		!strings.HasSuffix(svg, `</svg></div>`) {
		t.Errorf("chart markup %.400s", svg)
	}
	minor := regexp.MustCompile(`<text class="tick x minor" `).FindAllString(svg, -1)
	if len(minor) != len(xs)/2 {
		t.Errorf("%d minor time labels of %d, want every other one", len(minor), len(xs))
	}
}

func TestHealthChart_MultiDayWindowsLabelDates(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	svg := string(healthChart(health(start, 100*time.Minute, 101, map[int][2]float64{100: {1, 0}}), 7*24*time.Hour))
	var xs []string
	for _, x := range xTickRE.FindAllStringSubmatch(svg, -1) {
		xs = append(xs, x[1])
	}
	if len(xs) < 3 || len(xs) > 8 || xs[0] != "Nov 26" {
		t.Errorf("x ticks %v, want dates", xs)
	}
	titles := titleRE.FindAllStringSubmatch(svg, -1)
	if got := titles[100][1]; got != "Dec 2 10:40–12:20: 1 delivered, 0 failed, p99 340 ms" {
		t.Errorf("last title %q", got)
	}
}

func TestHealthChart_EmptyHasAxesAndNoBars(t *testing.T) {
	start := time.Date(2026, 12, 2, 13, 5, 0, 0, time.UTC)
	svg := string(healthChart(health(start, 5*time.Minute, 13, nil), time.Hour))
	if strings.Contains(svg, `class="ok"`) || strings.Contains(svg, "NaN") || len(titleRE.FindAllString(svg, -1)) != 13 {
		t.Fatalf("empty chart:\n%s", svg)
	}
}

// The overview's charts count attempts per bucket, as its cards count the
// window: the bars add up to the cards; the bucket still filling says so.
func TestOverviewCharts_CountsPerBucketAndP99OverTime(t *testing.T) {
	start := time.Date(2026, 12, 2, 13, 5, 0, 0, time.UTC)
	h := health(start, 5*time.Minute, 13, map[int][2]float64{11: {600, 30}, 12: {120, 0}})
	now := start.Add(12*5*time.Minute + 2*time.Minute) // two minutes into the last bucket
	attempts, p99 := overviewCharts(h, time.Hour, now)
	titles := titleRE.FindAllStringSubmatch(string(attempts), -1)
	if len(titles) != 13 || titles[11][1] != "14:00–14:05: 600 delivered, 30 failed, p99 340 ms" ||
		titles[12][1] != "14:05–14:10: 120 delivered, 0 failed, p99 340 ms so far" {
		t.Fatalf("attempt titles %q", titles)
	}
	if !strings.Contains(string(attempts), `>800</text>`) {
		t.Errorf("the attempts axis lacks its scale up to 800 (630 in the tallest bar):\n%s", attempts)
	}
	titles = titleRE.FindAllStringSubmatch(string(p99), -1)
	if len(titles) != 13 || titles[11][1] != "14:00–14:05: p99 340 ms over 630 attempts" || titles[0][1] != "13:05–13:10: no attempts" ||
		titles[12][1] != "14:05–14:10: p99 340 ms over 120 attempts so far" {
		t.Fatalf("p99 titles %q", titles)
	}
	if strings.Count(string(p99), `class="p99 dot"`) != 2 || !strings.Contains(string(p99), "<polyline") || !strings.Contains(string(p99), ">400 ms</text>") {
		t.Errorf("p99 chart:\n%s", p99)
	}
}

func TestScale_RoundSteps(t *testing.T) {
	for _, c := range []struct {
		most float64
		want string
	}{{0, "[0 1]"}, {1, "[0 0.5 1]"}, {123, "[0 50 100 150]"}, {9, "[0 5 10]"}, {0.3, "[0 0.1 0.2 0.3]"}, {4000, "[0 1000 2000 3000 4000]"}} {
		if _, ticks := scale(c.most); fmt.Sprint(ticks) != c.want {
			t.Errorf("scale(%v) = %v, want %s", c.most, ticks, c.want)
		}
	}
}

func TestMillis_UnitsPeopleRead(t *testing.T) {
	if got := millis(340.0); got != "340 ms" {
		t.Errorf("millis(340) = %q", got)
	}
	if got := millis(nil); got != "—" {
		t.Errorf("millis(nil) = %q", got)
	}
}

func TestNumbers_SeparatorsAndShortRates(t *testing.T) {
	for f, want := range map[float64]string{0: "0", 7: "7", 12345: "12,345", 1234567: "1,234,567", 0.25: "0.25", 1234.5: "1,234.5", -12345: "-12,345"} {
		if got := number(f); got != want {
			t.Errorf("number(%v) = %q, want %q", f, got, want)
		}
	}
	for f, want := range map[float64]string{0: "0/min", 0.42: "0.42/min", 0.048: "0.048/min", 0.001: "<0.01/min", 1.25: "1.2/min", 12: "12/min", 950: "950/min", 1200: "1.2k/min", 45000: "45k/min", 3.4e6: "3.4M/min", 999.9: "1k/min"} {
		if got := perMinute(f); got != want {
			t.Errorf("perMinute(%v) = %q, want %q", f, got, want)
		}
	}
	if got := plural(12345.0, "delivery", "deliveries"); got != "12,345 deliveries" {
		t.Errorf("plural = %q", got)
	}
	if got := plural(1.0, "delivery", "deliveries"); got != "1 delivery" {
		t.Errorf("plural(1) = %q", got)
	}
}

func TestMillis_SubMillisecond(t *testing.T) {
	for v, want := range map[float64]string{0: "<1 ms", 0.4: "0.4 ms", 5: "5 ms", 1500: "1.5 s"} {
		if got := millis(v); got != want {
			t.Errorf("millis(%v) = %q, want %q", v, got, want)
		}
	}
}
