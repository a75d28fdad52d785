package console

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"
)

// Charts are SVG drawn on the server (no script, no chart library): the
// numbers are computed here and every text goes through
// template.HTMLEscapeString. Each bucket is a <g> whose <title> is its
// hover value, over a transparent full-height rect so that a thin bar is
// as easy to point at as a tall one.

// bucket is one bucket of a health answer (GET /v1/subscriptions/{id}/health
// or GET /v1/admin/health).
type bucket struct {
	Start     time.Time
	Successes float64
	Failures  float64
	P99       *float64 // milliseconds
}

// series is a health answer's buckets with their width.
type series struct {
	Buckets []bucket
	Width   time.Duration
}

func (s series) end() time.Time {
	if len(s.Buckets) == 0 {
		return time.Time{}
	}
	return s.Buckets[len(s.Buckets)-1].Start.Add(s.Width)
}

// seriesOf reads a health answer's buckets; the width is bucket_seconds,
// or the gap between the first two buckets from an older hub.
func seriesOf(health m) series {
	var s series
	raw, _ := health["buckets"].([]any)
	for _, b := range raw {
		bm, _ := b.(map[string]any)
		t, err := time.Parse(time.RFC3339Nano, str(bm["start"]))
		if err != nil {
			continue
		}
		ok, _ := bm["successes"].(float64)
		fail, _ := bm["failures"].(float64)
		var p99 *float64
		if v, isNum := bm["p99_ms"].(float64); isNum {
			p99 = &v
		}
		s.Buckets = append(s.Buckets, bucket{Start: t.UTC(), Successes: ok, Failures: fail, P99: p99})
	}
	if secs, _ := health["bucket_seconds"].(float64); secs > 0 {
		s.Width = time.Duration(secs) * time.Second
	} else if len(s.Buckets) > 1 {
		s.Width = s.Buckets[1].Start.Sub(s.Buckets[0].Start)
	} else {
		s.Width = 5 * time.Minute
	}
	return s
}

// A chart is three SVGs in a grid the stylesheet lays out (.plot-area):
// the plot, which takes the page's width (its own coordinates, 0..plotVW
// across and 0..plotVH down, are stretched to the box: bars and lines do
// not mind, strokes keep their width with non-scaling-stroke), and beside
// and under it the axes, whose labels are placed by percentages of the
// plot's width and height and so keep their size at any width. On a narrow
// screen the stylesheet hides every other time label (class "minor").
const plotVW, plotVH = 1000.0, 100.0

// frame maps times and values to the plot's coordinates.
type frame struct {
	from, to time.Time
	top      float64 // the value at the top of the plot
}

// fx is t's place across the plot, from 0 to 1.
func (f frame) fx(t time.Time) float64 {
	span := f.to.Sub(f.from)
	if span <= 0 {
		return 0
	}
	return float64(t.Sub(f.from)) / float64(span)
}

func (f frame) x(t time.Time) float64 { return plotVW * f.fx(t) }

// fy is v's place down the plot, from 0 (top) to 1 (the axis).
func (f frame) fy(v float64) float64 { return 1 - v/f.top }

func (f frame) y(v float64) float64 { return plotVH * f.fy(v) }

// svg collects a chart's elements.
type svg struct{ b strings.Builder }

func (s *svg) f(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

func esc(s string) string { return template.HTMLEscapeString(s) }

// svgPct writes a fraction as an SVG percentage length.
func svgPct(f float64) string { return strconv.FormatFloat(f*100, 'f', 2, 64) + "%" }

// open starts the chart: the y axis's labels, the plot with its accessible
// name and grid; the caller draws the buckets, then close adds the x axis.
func (s *svg) open(class, name string, f frame, ticks []float64, yLabel func(float64) string) {
	s.f(`<div class="plot-area %s">`, class)
	s.f(`<svg class="axis y-axis" aria-hidden="true">`)
	for _, v := range ticks {
		s.f(`<text class="tick y" x="100%%" dx="-6" y="%s" text-anchor="end" dominant-baseline="middle" fill="#5b6470">%s</text>`, svgPct(f.fy(v)), esc(yLabel(v)))
	}
	s.f(`</svg>`)
	s.f(`<svg class="plot" viewBox="0 0 %g %g" preserveAspectRatio="none" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`, plotVW, plotVH, esc(name))
	s.f(`<title>%s</title>`, esc(name))
	for _, v := range ticks {
		y := f.y(v)
		s.f(`<line class="grid" x1="0" y1="%.2f" x2="%g" y2="%.2f" stroke="#d8dee6" stroke-width="1" vector-effect="non-scaling-stroke"/>`, y, plotVW, y)
	}
	s.f(`<line class="base" x1="0" y1="%g" x2="%g" y2="%g" stroke="#888" stroke-width="1" vector-effect="non-scaling-stroke"/>`, plotVH, plotVW, plotVH)
}

// close ends the plot and draws the x axis: a handful of round times, every
// other one "minor" (hidden on a narrow screen, so labels never run
// together); a label near the right edge ends at its tick instead of being
// centred past the edge.
func (s *svg) close(f frame) template.HTML {
	s.f(`</svg><svg class="axis x-axis" aria-hidden="true">`)
	for i, t := range timeTicks(f.from, f.to) {
		x, anchor := f.fx(t.at), "middle"
		if x > 0.94 {
			anchor = "end"
		}
		class := "tick x"
		if i%2 == 1 {
			class += " minor"
		}
		s.f(`<line class="%s" x1="%s" y1="0" x2="%s" y2="4" stroke="#888" stroke-width="1"/>`, class, svgPct(x), svgPct(x))
		s.f(`<text class="%s" x="%s" y="6" text-anchor="%s" dominant-baseline="hanging" fill="#5b6470">%s</text>`, class, svgPct(x), anchor, esc(t.label))
	}
	s.f(`</svg></div>`)
	return template.HTML(s.b.String()) // every text in it went through esc
}

// hit is a bucket's hover area and its title; the caller closes the <g>.
func (s *svg) hit(f frame, b bucket, width time.Duration, title string) (x, w float64) {
	x0, x1 := f.x(b.Start), f.x(b.Start.Add(width))
	s.f(`<g class="bucket"><title>%s</title>`, esc(title))
	s.f(`<rect class="hit" x="%.2f" y="0" width="%.2f" height="%g" fill="transparent"/>`, x0, x1-x0, plotVH)
	gap := (x1 - x0) * 0.1
	return x0 + gap, x1 - x0 - 2*gap
}

// stackedBars draws successes (green, below) and failures (red, above)
// per bucket, in units value gives; title is each bucket's hover text.
func stackedBars(class, name string, s series, value func(b bucket) (ok, fail float64), yLabel func(float64) string, title func(b bucket) string) template.HTML {
	var most float64
	for _, b := range s.Buckets {
		ok, fail := value(b)
		most = math.Max(most, ok+fail)
	}
	top, ticks := scale(most)
	f := frame{from: firstStart(s), to: s.end(), top: top}
	var out svg
	out.open(class, name, f, ticks, yLabel)
	for _, b := range s.Buckets {
		x, w := out.hit(f, b, s.Width, title(b))
		ok, fail := value(b)
		if ok > 0 {
			out.f(`<rect class="ok" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="#2e7d32"/>`, x, f.y(ok), w, f.y(0)-f.y(ok))
		}
		if fail > 0 {
			out.f(`<rect class="fail" x="%.2f" y="%.2f" width="%.2f" height="%.2f" fill="#c62828"/>`, x, f.y(ok+fail), w, f.y(ok)-f.y(ok+fail))
		}
		out.f(`</g>`)
	}
	return out.close(f)
}

// latencyLine draws each bucket's p99 as a line with a dot per bucket
// that had attempts; buckets without break the line. A dot is a line of
// no length with round caps: it stays round however the plot is stretched.
func latencyLine(class, name string, s series, title func(b bucket) string) template.HTML {
	var most float64
	for _, b := range s.Buckets {
		if b.P99 != nil {
			most = math.Max(most, *b.P99)
		}
	}
	top, ticks := scale(most)
	f := frame{from: firstStart(s), to: s.end(), top: top}
	var out svg
	out.open(class, name, f, ticks, func(v float64) string { return duration(time.Duration(v * float64(time.Millisecond))) })
	var run []string
	flush := func() {
		if len(run) > 1 {
			out.f(`<polyline class="p99" points="%s" fill="none" stroke="#0b57d0" stroke-width="2" vector-effect="non-scaling-stroke"/>`, strings.Join(run, " "))
		}
		run = nil
	}
	for _, b := range s.Buckets {
		if b.P99 == nil {
			flush()
			continue
		}
		run = append(run, fmt.Sprintf("%.2f,%.2f", f.x(b.Start.Add(s.Width/2)), f.y(*b.P99)))
	}
	flush()
	for _, b := range s.Buckets {
		out.hit(f, b, s.Width, title(b))
		if b.P99 != nil {
			x, y := f.x(b.Start.Add(s.Width/2)), f.y(*b.P99)
			out.f(`<line class="p99 dot" x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="#0b57d0" stroke-width="7" stroke-linecap="round" vector-effect="non-scaling-stroke"/>`, x, y, x, y)
		}
		out.f(`</g>`)
	}
	return out.close(f)
}

func firstStart(s series) time.Time {
	if len(s.Buckets) == 0 {
		return time.Time{}
	}
	return s.Buckets[0].Start
}

// scale picks the y axis's top and ticks for values up to most: 1, 2 or 5
// times a power of ten apart, about four of them.
func scale(most float64) (top float64, ticks []float64) {
	if most <= 0 {
		return 1, []float64{0, 1}
	}
	raw := most / 4
	exp := math.Floor(math.Log10(raw))
	mult := 10.0
	for _, m := range []float64{1, 2, 5} {
		if m*math.Pow(10, exp) >= raw {
			mult = m
			break
		}
	}
	// v(i) is i steps of mult × 10^exp, computed so that 3 × 0.1 is 0.3.
	v := func(i int) float64 {
		if exp < 0 {
			return float64(i) * mult / math.Pow(10, -exp)
		}
		return float64(i) * mult * math.Pow(10, exp)
	}
	for i := 0; ; i++ {
		ticks = append(ticks, v(i))
		if v(i) >= most*(1-1e-9) {
			return v(i), ticks
		}
	}
}

type timeTick struct {
	at    time.Time
	label string
}

// tickSteps are the x axis's candidate spacings; the axis takes the first
// that puts at most seven ticks on the span.
var tickSteps = []time.Duration{
	5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour,
	3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour, 48 * time.Hour, 7 * 24 * time.Hour,
}

// timeTicks labels a handful of round times between from and to (UTC):
// "14:05" within a day, dates ("Dec 2") on longer spans.
func timeTicks(from, to time.Time) []timeTick {
	span := to.Sub(from)
	if span <= 0 {
		return nil
	}
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= 7 {
			step = s
			break
		}
	}
	var out []timeTick
	for t := from.Truncate(step); !t.After(to); t = t.Add(step) {
		if t.Before(from) {
			continue
		}
		out = append(out, timeTick{t, tickLabel(t, span, step)})
	}
	return out
}

func tickLabel(t time.Time, span, step time.Duration) string {
	t = t.UTC()
	switch {
	case span <= 24*time.Hour:
		return t.Format("15:04")
	case step >= 24*time.Hour:
		return t.Format("Jan 2")
	}
	return t.Format("Jan 2 15:04")
}

// bucketSpan names a bucket's time span for its hover text:
// "14:05–14:10", or with the date on windows longer than a day.
func bucketSpan(b bucket, width, window time.Duration) string {
	from, to := b.Start.UTC(), b.Start.Add(width).UTC()
	if window <= 24*time.Hour {
		return from.Format("15:04") + "–" + to.Format("15:04")
	}
	if from.Format("2006-01-02") == to.Format("2006-01-02") {
		return from.Format("Jan 2 15:04") + "–" + to.Format("15:04")
	}
	return from.Format("Jan 2 15:04") + "–" + to.Format("Jan 2 15:04")
}

// attemptsTitle is a bucket's hover text on a health chart:
// "14:05–14:10: 120 delivered, 3 failed, p99 340 ms".
func attemptsTitle(b bucket, width, window time.Duration) string {
	span := bucketSpan(b, width, window)
	if b.Successes+b.Failures == 0 {
		return span + ": no attempts"
	}
	t := fmt.Sprintf("%s: %s delivered, %s failed", span, number(b.Successes), number(b.Failures))
	if b.P99 != nil {
		t += ", p99 " + millis(*b.P99)
	}
	return t
}

// healthChart is a subscription's health chart: attempts per bucket,
// successes under failures.
func healthChart(health m, window time.Duration) template.HTML {
	s := seriesOf(health)
	if window <= 0 {
		window = s.end().Sub(firstStart(s))
	}
	return stackedBars("chart-health", "Delivered and failed attempts per bucket", s,
		func(b bucket) (float64, float64) { return b.Successes, b.Failures }, compact,
		func(b bucket) string { return attemptsTitle(b, s.Width, window) })
}

// overviewCharts are the operator overview's charts of the hub's health
// answer: delivered and failed attempts per bucket, counted as the cards
// above them count the window (the bars add up to the cards), and the p99
// latency per bucket. The bucket holding now is still filling: its hover
// text says "so far".
func overviewCharts(health m, window time.Duration, now time.Time) (attempts, p99 template.HTML) {
	s := seriesOf(health)
	soFar := func(b bucket) string {
		if now.Before(b.Start.Add(s.Width)) {
			return " so far"
		}
		return ""
	}
	attempts = stackedBars("chart-rates", "Delivered and failed attempts per bucket", s,
		func(b bucket) (float64, float64) { return b.Successes, b.Failures }, compact,
		func(b bucket) string { return attemptsTitle(b, s.Width, window) + soFar(b) })
	p99 = latencyLine("chart-p99", "Attempt latency p99 per bucket", s, func(b bucket) string {
		span := bucketSpan(b, s.Width, window)
		if b.P99 == nil {
			return span + ": no attempts"
		}
		return fmt.Sprintf("%s: p99 %s over %s%s", span, millis(*b.P99), plural(b.Successes+b.Failures, "attempt", "attempts"), soFar(b))
	})
	return attempts, p99
}
