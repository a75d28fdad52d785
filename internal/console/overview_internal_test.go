package console

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

func TestRates_PerSecondAgainstTheOldestSampleOfFiveMinutes(t *testing.T) {
	rt := newRates()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if got, over := rt.observe(t0, map[string]float64{"a": 100}); got != nil || over != 0 {
		t.Fatalf("first look: %v over %v, want no rate yet", got, over)
	}
	got, over := rt.observe(t0.Add(10*time.Second), map[string]float64{"a": 150})
	if got["a"] != 5 || over != 10*time.Second {
		t.Fatalf("after 10 s: %v over %v, want 5/s", got, over)
	}
	rt.observe(t0.Add(4*time.Minute), map[string]float64{"a": 200})
	got, over = rt.observe(t0.Add(6*time.Minute), map[string]float64{"a": 300})
	if over != 5*time.Minute+50*time.Second || got["a"] != 150/over.Seconds() {
		t.Fatalf("after 6 min: %v over %v, want against the 10 s sample", got, over)
	}
	// A counter that went down (a restart) is no negative rate.
	got, _ = rt.observe(t0.Add(7*time.Minute), map[string]float64{"a": 0})
	if got["a"] != 0 {
		t.Fatalf("after a reset: %v", got)
	}
}

func TestQuantile_LinearWithinTheBucket(t *testing.T) {
	h := &dto.Histogram{SampleCount: proto.Uint64(100), Bucket: []*dto.Bucket{
		{UpperBound: proto.Float64(0.1), CumulativeCount: proto.Uint64(50)},
		{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(90)},
		{UpperBound: proto.Float64(10), CumulativeCount: proto.Uint64(100)},
	}}
	if q, ok := quantile(h, 0.99); !ok || q < 9.09 || q > 9.11 {
		t.Fatalf("p99 = %v, want 9.1", q)
	}
	if q, _ := quantile(h, 0.5); q != 0.1 {
		t.Fatalf("p50 = %v, want 0.1", q)
	}
	if _, ok := quantile(&dto.Histogram{}, 0.99); ok {
		t.Fatal("an empty histogram has no quantile")
	}
}

func TestSafeLink_OnlyHTTP(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.com/x": "https://example.com/x", "http://a.b": "http://a.b",
		"javascript:alert(1)": "", "JAVASCRIPT:alert(1)": "", "data:text/html,x": "", "//evil.example": "", "/relative": "",
	} {
		if got := string(safeLink(in)); got != want {
			t.Errorf("safeLink(%q) = %q, want %q", in, got, want)
		}
	}
}
