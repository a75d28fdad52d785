package dispatch

import (
	"sync"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// hints are what the claimer knows of the subscriptions between claims,
// so that a claim targets the few that may have work instead of looking
// at all of them:
//
//   - freed: subscriptions whose jobs just finished here, or whose jobs
//     were announced (new, woken): the next claim names them;
//   - drained: ordered subscriptions known to have nothing pending (a
//     claim took every job they had due, or their jobs were born here):
//     when their jobs finish, no claim is made for them until new jobs are
//     announced.
//
// seq counts announcements and hints; a claim (or a birth) that one
// overlapped marks nothing drained, since what it saw may be stale.
type hints struct {
	mu       sync.Mutex
	freed    map[string]struct{}
	drained  map[string]struct{}
	seq      uint64
	hintedAt map[string]uint64 // each subscription's last hint
	wokeAt   uint64            // the last wake (any subscription)
	// ready is signalled (without blocking) when subscriptions are added.
	ready chan struct{}
}

func newHints() *hints {
	return &hints{freed: make(map[string]struct{}), drained: make(map[string]struct{}),
		hintedAt: make(map[string]uint64), ready: make(chan struct{}, 1)}
}

// now is the current sequence number: a claim or a birth notes it first.
func (h *hints) now() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq
}

// wake notes that any subscription may have new jobs: nothing is drained.
func (h *hints) wake() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	h.wokeAt = h.seq
	clear(h.drained)
}

// add names subscriptions for the next targeted claim: they are drained
// no longer.
func (h *hints) add(ids []string) {
	if len(ids) == 0 {
		return
	}
	h.mu.Lock()
	h.seq++
	for _, id := range ids {
		h.freed[id] = struct{}{}
		delete(h.drained, id)
		h.hintedAt[id] = h.seq
	}
	h.mu.Unlock()
	select {
	case h.ready <- struct{}{}:
	default:
	}
}

// take returns the subscriptions named since the last take.
func (h *hints) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.freed))
	for id := range h.freed {
		out = append(out, id)
		delete(h.freed, id)
	}
	return out
}

// claimed marks drained the ordered subscriptions a claim took fewer jobs
// of than a run may hold: it took every job they had due (at its
// snapshot); one it took a whole run of is drained no longer. A claim
// that filled its batch, or that a hint overlapped (seq is now() before
// it), marks nothing.
func (h *hints) claimed(claimed []store.Claimed, p store.ClaimParams, seq uint64) {
	if len(claimed) == 0 || len(claimed) >= p.Batch {
		return
	}
	n := make(map[string]int)
	for _, c := range claimed {
		if c.Subscription.MaxInFlight <= 1 {
			n[c.Job.SubscriptionID]++
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seq != seq {
		return
	}
	for id, k := range n {
		if k < p.Run {
			h.drained[id] = struct{}{}
		} else {
			delete(h.drained, id) // a whole run: more may wait behind it
		}
	}
}

// born marks drained the ordered subscriptions whose jobs were born here
// (the store leases an ordered subscription's job at birth only when it
// has nothing pending), unless a hint of theirs, or a wake, came after the
// offer (seq).
func (h *hints) born(subs []string, seq uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.wokeAt > seq {
		return
	}
	for _, id := range subs {
		if h.hintedAt[id] <= seq {
			h.drained[id] = struct{}{}
		}
	}
}

// undrained drops the drained subscriptions from ids.
func (h *hints) undrained(ids []string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := ids[:0:0]
	for _, id := range ids {
		if _, ok := h.drained[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// undrain forgets that subscriptions were drained: jobs of theirs went
// back to pending here.
func (h *hints) undrain(ids []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ids {
		delete(h.drained, id)
	}
}
