package store

import (
	"slices"
	"sync"

	hub "github.com/lerianstudio/streaming-hub"
)

// ListenParams say what Dispatch.ListenJobs tells.
type ListenParams struct {
	// OnJobs is called, without blocking, when jobs may have become due:
	// with the subscriptions of the jobs ingest created, or with nil when
	// any subscription may have them (a notification too big to name
	// them, or a listening connection lost and back, which may have missed
	// some).
	OnJobs func(subscriptionIDs []string)
	// OnLost, when set, is told why the listening connection was lost; it
	// is dialed again.
	OnLost func(err error)
	// Ready, when set, is called once this process's new jobs will be told
	// (at once: a claim made after it misses nothing of this process's).
	// Other processes' are told once the listening connection listens,
	// which then calls OnJobs(nil) for what came before.
	Ready func()
}

// Wakes are the in-process listeners of a store: the drivers tell them of
// the jobs a transaction created once it commits.
type Wakes struct {
	mu   sync.Mutex
	next int
	fns  map[int]func([]string)
}

// Add registers fn until remove is called.
func (w *Wakes) Add(fn func([]string)) (remove func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fns == nil {
		w.fns = make(map[int]func([]string))
	}
	id := w.next
	w.next++
	w.fns[id] = fn
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.fns, id)
	}
}

// Notify tells every listener of the subscriptions' new due jobs; none
// tells nothing.
func (w *Wakes) Notify(subscriptionIDs []string) {
	if len(subscriptionIDs) == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, fn := range w.fns {
		fn(subscriptionIDs)
	}
}

// SubscriptionsOfJobs lists the subscriptions of jobs, once each, sorted.
func SubscriptionsOfJobs(jobs []hub.Job) []string {
	out := distinct(jobs, func(j hub.Job) string { return j.SubscriptionID })
	slices.Sort(out)
	return out
}

// SubscriptionsOfClaimed lists the subscriptions of claimed jobs, once
// each, sorted.
func SubscriptionsOfClaimed(cs []Claimed) []string {
	out := distinct(cs, func(c Claimed) string { return c.Job.SubscriptionID })
	slices.Sort(out)
	return out
}

// PendingSubscriptions lists, once each and sorted, the subscriptions of
// the jobs not born leased (among born): the dispatchers are told of
// those.
func PendingSubscriptions(jobs []hub.Job, born []Claimed) []string {
	leased := make(map[string]bool, len(born))
	for _, c := range born {
		leased[c.Job.ID] = true
	}
	var rest []hub.Job
	for _, j := range jobs {
		if !leased[j.ID] {
			rest = append(rest, j)
		}
	}
	return SubscriptionsOfJobs(rest)
}
