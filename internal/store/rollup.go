package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// RollupWidth is the time bucket of a subscription's health rollups: each
// completion batch adds its attempts to the bucket they started in, so a
// health read costs the number of buckets in its window, never the number
// of attempts.
const RollupWidth = 5 * time.Minute

// LatencyBounds are the upper bounds of the latency histogram's buckets;
// a last, open bucket holds the slower attempts.
var LatencyBounds = [...]time.Duration{
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2500 * time.Millisecond,
	5 * time.Second, 10 * time.Second, 30 * time.Second,
}

// LatencyBuckets is how many histogram buckets a rollup has.
const LatencyBuckets = len(LatencyBounds) + 1

// Rollup is one subscription's attempts in one time bucket.
type Rollup struct {
	SubscriptionID string
	Start          time.Time
	Successes      int64
	Failures       int64
	Latency        [LatencyBuckets]int64
	LastSuccessAt  *time.Time
	LastFailureAt  *time.Time
	LastError      string
}

// Add folds o (same subscription) into r.
func (r *Rollup) Add(o Rollup) {
	r.Successes += o.Successes
	r.Failures += o.Failures
	for i := range r.Latency {
		r.Latency[i] += o.Latency[i]
	}
	if o.LastSuccessAt != nil && (r.LastSuccessAt == nil || o.LastSuccessAt.After(*r.LastSuccessAt)) {
		r.LastSuccessAt = o.LastSuccessAt
	}
	if o.LastFailureAt != nil && (r.LastFailureAt == nil || !o.LastFailureAt.Before(*r.LastFailureAt)) {
		r.LastFailureAt, r.LastError = o.LastFailureAt, o.LastError
	}
}

func latencyBucket(d time.Duration) int {
	for i, b := range LatencyBounds {
		if d <= b {
			return i
		}
	}
	return len(LatencyBounds)
}

// Rollups folds a batch's attempts into one rollup per subscription and
// bucket, in (subscription, start) order. A result without an attempt
// (shed) is not counted: nothing was tried. An attempt succeeded when its
// job did.
func Rollups(cs []Completion) []Rollup {
	type key struct {
		sub   string
		start time.Time
	}
	m := make(map[key]*Rollup)
	for _, c := range cs {
		a := c.Attempt
		if a == nil || c.SubscriptionID == "" {
			continue
		}
		k := key{c.SubscriptionID, a.StartedAt.UTC().Truncate(RollupWidth)}
		r := m[k]
		if r == nil {
			r = &Rollup{SubscriptionID: k.sub, Start: k.start}
			m[k] = r
		}
		at := a.StartedAt.UTC()
		one := Rollup{}
		one.Latency[latencyBucket(a.Duration)] = 1
		if c.Status == hub.JobSucceeded {
			one.Successes, one.LastSuccessAt = 1, &at
		} else {
			one.Failures, one.LastFailureAt, one.LastError = 1, &at, attemptError(c)
		}
		r.Add(one)
	}
	out := make([]Rollup, 0, len(m))
	for _, r := range m {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].SubscriptionID != out[j].SubscriptionID {
			return out[i].SubscriptionID < out[j].SubscriptionID
		}
		return out[i].Start.Before(out[j].Start)
	})
	return out
}

func attemptError(c Completion) string {
	switch {
	case c.Attempt.Error != "":
		return CleanText(c.Attempt.Error, 1024)
	case c.LastError != "":
		return CleanText(c.LastError, 1024)
	case c.Attempt.StatusCode != 0:
		return fmt.Sprintf("HTTP %d", c.Attempt.StatusCode)
	}
	return "failed"
}

// Health is the part of the store GET /v1/subscriptions/{id}/health reads.
type Health interface {
	// ListRollups returns a subscription's rollups whose bucket starts at
	// or after From, oldest first.
	ListRollups(ctx context.Context, subscriptionID string, from time.Time) ([]Rollup, error)
	// ListHubRollups returns every subscription's rollups whose bucket
	// starts at or after from, summed per bucket, oldest first: the hub's
	// attempts over time (GET /v1/admin/health). SubscriptionID and
	// LastError are empty; the last success and failure are the latest of
	// any subscription.
	ListHubRollups(ctx context.Context, from time.Time) ([]Rollup, error)
	// Backlog counts a subscription's live jobs: pending, in flight and
	// dead-lettered.
	Backlog(ctx context.Context, subscriptionID string) (map[hub.JobStatus]int64, error)
	// PruneRollups deletes rollups whose bucket started before before.
	PruneRollups(ctx context.Context, before time.Time) (int, error)
}

// HealthSummary is a window of rollups summed up.
type HealthSummary struct {
	Window        time.Duration
	Attempts      int64
	Successes     int64
	Failures      int64
	SuccessRate   *float64 // nil without attempts
	P50, P95, P99 *float64 // milliseconds; nil without attempts
	LastSuccessAt *time.Time
	LastFailureAt *time.Time
	LastError     string
	// Width is each bucket's span: a whole number of RollupWidth.
	Width   time.Duration
	Buckets []HealthBucket
}

// HealthBucket is one bar of a health answer.
type HealthBucket struct {
	Start     time.Time
	Successes int64
	Failures  int64
	P99       *float64 // milliseconds; nil without attempts
}

// MaxHealthBuckets bounds the bars of a health answer.
const MaxHealthBuckets = 100

// HealthFrom is the first rollup bucket a window ending at now covers: the
// bucket that holds now - window.
func HealthFrom(now time.Time, window time.Duration) time.Time {
	return now.UTC().Add(-window).Truncate(RollupWidth)
}

// Summarize sums rollups (as ListRollups returned them from
// HealthFrom(now, window)) into a health answer with at most
// MaxHealthBuckets bars, each a whole number of rollup buckets, from the
// window's first bucket to the one holding now.
func Summarize(rollups []Rollup, now time.Time, window time.Duration) HealthSummary {
	from := HealthFrom(now, window)
	end := now.UTC().Truncate(RollupWidth).Add(RollupWidth)
	span := end.Sub(from)
	per := (span/RollupWidth + MaxHealthBuckets - 1) / MaxHealthBuckets
	width := per * RollupWidth
	n := int((span + width - 1) / width)
	h := HealthSummary{Window: window, Width: width, Buckets: make([]HealthBucket, n)}
	for i := range h.Buckets {
		h.Buckets[i].Start = from.Add(time.Duration(i) * width)
	}
	var all Rollup
	perBucket := make([]Rollup, n)
	for _, r := range rollups {
		if r.Start.Before(from) || !r.Start.Before(end) {
			continue
		}
		all.Add(r)
		i := int(r.Start.Sub(from) / width)
		perBucket[i].Add(r)
		b := &h.Buckets[i]
		b.Successes += r.Successes
		b.Failures += r.Failures
	}
	for i, r := range perBucket {
		if r.Successes+r.Failures > 0 {
			h.Buckets[i].P99 = quantile(r.Latency, 0.99)
		}
	}
	h.Successes, h.Failures = all.Successes, all.Failures
	h.Attempts = all.Successes + all.Failures
	h.LastSuccessAt, h.LastFailureAt, h.LastError = all.LastSuccessAt, all.LastFailureAt, all.LastError
	if h.Attempts > 0 {
		rate := float64(h.Successes) / float64(h.Attempts)
		h.SuccessRate = &rate
		h.P50, h.P95, h.P99 = quantile(all.Latency, 0.50), quantile(all.Latency, 0.95), quantile(all.Latency, 0.99)
	}
	return h
}

// quantile estimates a latency quantile from the histogram, interpolating
// linearly inside the bucket it falls in (the open bucket answers its
// lower bound).
func quantile(hist [LatencyBuckets]int64, q float64) *float64 {
	var total int64
	for _, c := range hist {
		total += c
	}
	rank := q * float64(total)
	var seen float64
	for i, c := range hist {
		if c == 0 {
			continue
		}
		if seen+float64(c) >= rank {
			lo := 0.0
			if i > 0 {
				lo = ms(LatencyBounds[i-1])
			}
			if i == len(LatencyBounds) {
				return &lo
			}
			hi := ms(LatencyBounds[i])
			v := lo + (hi-lo)*(rank-seen)/float64(c)
			v = float64(int64(v*10+0.5)) / 10
			return &v
		}
		seen += float64(c)
	}
	v := 0.0
	return &v
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
