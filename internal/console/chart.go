package console

import (
	"fmt"
	"time"
)

// chart is the health chart drawn as SVG on the server: one bar per
// bucket, successes stacked under failures. The template draws the rects;
// the numbers are computed here, so no chart library and no script.
type chart struct {
	Width, Height, Base int
	Bars                []bar
	Max                 int64
	First, Last         string
	Empty               bool
}

type bar struct {
	X, W         float64
	SuccY, SuccH float64
	FailY, FailH float64
	Label        string
}

const chartW, chartH, chartPad = 800, 200, 20

func healthChart(health m) chart {
	buckets, _ := health["buckets"].([]any)
	c := chart{Width: chartW, Height: chartH + chartPad, Base: chartH}
	var maxV int64 = 0
	type pt struct {
		start      string
		succ, fail int64
	}
	var pts []pt
	for _, b := range buckets {
		bm, _ := b.(map[string]any)
		s, _ := bm["successes"].(float64)
		f, _ := bm["failures"].(float64)
		start, _ := bm["start"].(string)
		pts = append(pts, pt{start, int64(s), int64(f)})
		maxV = max(maxV, int64(s)+int64(f))
	}
	c.Max = maxV
	if len(pts) == 0 || maxV == 0 {
		c.Empty = true
	}
	if len(pts) == 0 {
		return c
	}
	c.First, c.Last = when(pts[0].start), when(pts[len(pts)-1].start)
	slot := float64(chartW) / float64(len(pts))
	scale := 0.0
	if maxV > 0 {
		scale = float64(chartH) / float64(maxV)
	}
	for i, p := range pts {
		sh, fh := float64(p.succ)*scale, float64(p.fail)*scale
		start := p.start
		if t, err := time.Parse(time.RFC3339Nano, p.start); err == nil {
			start = t.UTC().Format("2006-01-02 15:04Z")
		}
		c.Bars = append(c.Bars, bar{
			X: float64(i)*slot + slot*0.1, W: slot * 0.8,
			SuccY: chartH - sh, SuccH: sh,
			FailY: chartH - sh - fh, FailH: fh,
			Label: fmt.Sprintf("%s: %d succeeded, %d failed", start, p.succ, p.fail),
		})
	}
	return c
}
