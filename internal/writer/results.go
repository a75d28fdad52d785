package writer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// A result is never given up while the process runs for a reason a retry
// may cure (docs/operations.md, "Results that cannot be written"): its
// write is tried again with back-off for as long as the database stays
// away, meanwhile records go on in batches of their own; a retry first
// asks which results the failed try wrote after all (its COMMIT went
// through, its answer was lost) and writes only the rest. A batch the
// database refuses for good (store.IsPermanent) is split until the result
// it refuses is alone; that one is given up. Only the end of the process
// abandons results: their jobs are then taken over by another process (or
// the next start) and sent again, at least once.

// resultsWritten accounts for results written.
func (w *Writer) resultsWritten(cs []store.Completion, res store.CompleteResult, placed func([]store.Claimed, bool)) {
	if d := w.cfg.Delivery; d != nil {
		d.Written(cs, res)
	}
	placed(res.Claimed, true)
	w.mu.Lock()
	w.writing -= len(cs)
	w.held, w.tries, w.wait = false, 0, firstWait
	w.mu.Unlock()
	w.failing.ok()
}

// resultsFailed puts results whose write failed back at the head of the
// queue, held for a back-off (or, refused for good, splits them).
func (w *Writer) resultsFailed(cs []store.Completion, err error) {
	w.failing.failed(time.Now(), err)
	if store.IsPermanent(err) {
		w.mu.Lock()
		w.writing -= len(cs)
		w.mu.Unlock()
		w.split(cs, err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writing -= len(cs)
	w.tries++
	wait := w.wait/2 + rand.N(w.wait/2+1) // replicas that failed together do not retry in lockstep
	w.results = append(append([]store.Completion{}, cs...), w.results...)
	w.held, w.heldUntil = true, time.Now().Add(wait)
	w.wait = min(2*w.wait, maxWait)
	w.cfg.Logger.Error("recording delivery results failed; retrying until the database answers (records go on meanwhile)",
		"results", len(cs), "tries", w.tries, "next_try_in", wait, "err", err)
	w.cfg.Metrics.ResultWriteRetries.Inc()
}

// split writes the halves of a batch the database refused for good, each
// alone, so one result it cannot take holds up no other. A result refused
// alone is given up: its job is no longer held here, and is given back
// and sent again.
func (w *Writer) split(cs []store.Completion, err error) {
	if len(cs) == 1 {
		w.cfg.Metrics.ResultsGivenUp.Inc()
		w.cfg.Logger.Error("the database refused this delivery result for good; it is given up, and the job is given back "+
			"and delivered again", "job", cs[0].JobID, "subscription", cs[0].SubscriptionID, "status", cs[0].Status, "err", err)
		if d := w.cfg.Delivery; d != nil {
			d.GivenUp(cs)
		}
		return
	}
	w.cfg.Logger.Warn("the database refused a batch of delivery results; writing it in halves to find the result it refuses",
		"results", len(cs), "err", err)
	half := len(cs) / 2
	for _, part := range [][]store.Completion{cs[:half], cs[half:]} {
		w.mu.Lock()
		w.writing += len(part)
		w.mu.Unlock()
		p := store.WriteParams{DeferStats: true}
		placed := func([]store.Claimed, bool) {}
		if d := w.cfg.Delivery; d != nil {
			// No hand-off: what these free is claimed by the claim loop.
			p.Complete, placed = d.HandOff(nil)
		}
		p.Complete.Completions, p.Complete.Next = part, nil
		res, err := w.try(p)
		if err == nil {
			w.gather(p, res)
			w.resultsWritten(part, res.Complete, placed)
			continue
		}
		placed(nil, false)
		w.resultsFailed(part, err)
	}
}

// unrecorded drops from results whose last write failed those that write
// recorded after all (store.ResultsRecorded): writing them again would log
// their attempts twice, or be fenced on their own lease. When the store
// cannot tell (it is still away), all are tried again.
func (w *Writer) unrecorded(cs []store.Completion) []store.Completion {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	recorded, err := w.cfg.Store.ResultsRecorded(ctx, cs)
	cancel()
	if err != nil || len(recorded) == 0 {
		return cs
	}
	done := make(map[string]bool, len(recorded))
	for _, id := range recorded {
		done[id] = true
	}
	var rest, written []store.Completion
	for _, c := range cs {
		if done[c.JobID] {
			written = append(written, c)
		} else {
			rest = append(rest, c)
		}
	}
	w.cfg.Logger.Info("results found written by a try whose answer was lost", "results", len(written))
	if d := w.cfg.Delivery; d != nil {
		d.Written(written, store.CompleteResult{})
	}
	w.mu.Lock()
	w.writing -= len(written)
	w.mu.Unlock()
	return rest
}

// failing tracks how long results have failed to be written: readiness
// reports it past a bound (Unwritten).
type failing struct {
	mu      sync.Mutex
	since   time.Time
	lastErr error
}

func (f *failing) failed(at time.Time, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.since.IsZero() {
		f.since = at
	}
	f.lastErr = err
}

func (f *failing) ok() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.since, f.lastErr = time.Time{}, nil
}

// Unwritten is the readiness check named results: an error while delivery
// results have failed to be written for longer than after. Their jobs were
// answered; they stay this process's (its heartbeat goes on) until the
// write goes through, so no other process sends them again meanwhile.
func (w *Writer) Unwritten(after time.Duration) func(context.Context) error {
	return func(context.Context) error {
		w.failing.mu.Lock()
		since, err := w.failing.since, w.failing.lastErr
		w.failing.mu.Unlock()
		if since.IsZero() {
			return nil
		}
		if d := time.Since(since); d > after {
			return fmt.Errorf("delivery results have failed to be written for %s: %v", d.Round(time.Second), err)
		}
		return nil
	}
}
