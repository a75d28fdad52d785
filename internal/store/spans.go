package store

import (
	"sort"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// SpanUpdate is how a batch of results moves one subscription's open
// failure span (first and last failed attempt since the last success).
type SpanUpdate struct {
	SubscriptionID string
	// Reset: the batch had a success, so the span becomes exactly First
	// and Last (the failures after that success; nil when none).
	// Otherwise the batch only failed: the span starts at First if it was
	// closed, and its last failure moves to Last.
	Reset       bool
	First, Last *time.Time
}

// Spans folds a batch's attempts into one update per subscription, in the
// order the attempts started. An attempt succeeded when its job did (an
// answer outside 2xx is a failure whatever error text it carries). Results
// without an attempt (shed) do not count: nothing was tried.
func Spans(cs []Completion) []SpanUpdate {
	type attempt struct {
		at time.Time
		ok bool
	}
	bySub := make(map[string][]attempt)
	for _, c := range cs {
		if c.Attempt == nil || c.SubscriptionID == "" {
			continue
		}
		bySub[c.SubscriptionID] = append(bySub[c.SubscriptionID], attempt{c.Attempt.StartedAt, c.Status == hub.JobSucceeded})
	}
	out := make([]SpanUpdate, 0, len(bySub))
	for id, as := range bySub {
		sort.Slice(as, func(i, j int) bool { return as[i].at.Before(as[j].at) })
		u := SpanUpdate{SubscriptionID: id}
		for _, a := range as {
			switch {
			case a.ok:
				u.Reset, u.First, u.Last = true, nil, nil
			case u.First == nil:
				at := a.at
				u.First, u.Last = &at, &at
			default:
				at := a.at
				u.Last = &at
			}
		}
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].SubscriptionID < out[j].SubscriptionID })
	return out
}

// Failing lists the subscriptions whose last attempt in the batch failed:
// the only ones auto-disable may fire for.
func Failing(cs []Completion) []string {
	var out []string
	for _, u := range Spans(cs) {
		if u.Last != nil {
			out = append(out, u.SubscriptionID)
		}
	}
	return out
}

// Fenced returns the jobs of cs that are not in written: their lease was
// lost, so their results were not recorded.
func Fenced(cs []Completion, written []string) []string {
	ok := make(map[string]bool, len(written))
	for _, id := range written {
		ok[id] = true
	}
	var out []string
	for _, c := range cs {
		if !ok[c.JobID] {
			out = append(out, c.JobID)
		}
	}
	return out
}

// SubscriptionsOf returns the distinct subscriptions of cs.
func SubscriptionsOf(cs []Completion) []string {
	return distinct(cs, func(c Completion) string { return c.SubscriptionID })
}

// NextTargets are the subscriptions a completion batch hands off to: those
// of cs, or only the given ones when set.
func NextTargets(cs []Completion, only []string) []string {
	if only != nil {
		return only
	}
	return SubscriptionsOf(cs)
}
