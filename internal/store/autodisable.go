package store

import (
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// OpenSpan is a subscription's open failure span as a driver read it, with
// the subscription locked, when auto-disable may fire.
type OpenSpan struct {
	SubscriptionID string
	hub.FailureSpan
}

// Due reports whether span is both sustained (its first failure at least
// Window before now) and spread (its first and last failures at least
// Spread apart): the two gates of
// docs/breakers.md.
func (g AutoDisable) Due(span hub.FailureSpan, now time.Time) bool {
	return !span.First.After(now.Add(-g.Window)) && span.Last.Sub(span.First) >= g.Spread
}

// Cutoff is the latest first failure a span may have to be Due at now: a
// driver may read only the spans that began by then.
func (g AutoDisable) Cutoff(now time.Time) time.Time { return now.Add(-g.Window) }

// Disable returns, in the order of spans, the subscriptions auto-disable
// turns off at now, each with the reason it stores.
func (g AutoDisable) Disable(spans []OpenSpan, now time.Time) []Disabled {
	var out []Disabled
	for _, s := range spans {
		if g.Due(s.FailureSpan, now) {
			out = append(out, Disabled{SubscriptionID: s.SubscriptionID, Reason: DisabledReason(s.FailureSpan)})
		}
	}
	return out
}

// DisabledReason is what an auto-disabled subscription says of why, to the
// second, in UTC.
func DisabledReason(span hub.FailureSpan) string {
	const layout = "2006-01-02T15:04:05Z"
	return "auto-disabled: failing since " + span.First.UTC().Format(layout) +
		", last failure " + span.Last.UTC().Format(layout)
}

// DisabledIDs are the subscriptions of ds.
func DisabledIDs(ds []Disabled) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.SubscriptionID
	}
	return out
}
