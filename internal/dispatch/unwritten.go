package dispatch

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// unwritten tracks the result batches whose write is failing right now:
// readiness reports a completer that has written nothing for longer than a
// lease (docs/operations.md, "Results that cannot be written").
type unwritten struct {
	mu      sync.Mutex
	next    int
	failing map[int]time.Time // batch -> when its write first failed
	lastErr error
}

func (u *unwritten) begin() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.next++
	return u.next
}

func (u *unwritten) failed(id int, at time.Time, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.failing == nil {
		u.failing = make(map[int]time.Time)
	}
	if _, ok := u.failing[id]; !ok {
		u.failing[id] = at
	}
	u.lastErr = err
}

func (u *unwritten) end(id int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.failing, id)
}

// oldest is when the longest-failing batch first failed, and the latest
// error; ok is false when no write is failing.
func (u *unwritten) oldest() (since time.Time, err error, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, at := range u.failing {
		if !ok || at.Before(since) {
			since, ok = at, true
		}
	}
	return since, u.lastErr, ok
}

// Unwritten is the readiness check named results: an error while a batch
// of delivery results has failed to be written for longer than a lease. Its
// jobs were answered; they stay leased to this process until the write
// goes through, so no other replica takes them over meanwhile.
func (d *Dispatcher) Unwritten(context.Context) error {
	since, err, ok := d.unwritten.oldest()
	if !ok {
		return nil
	}
	if failing := d.now().Sub(since); failing > d.cfg.Lease {
		return fmt.Errorf("delivery results have failed to be written for %s: %v", failing.Round(time.Second), err)
	}
	return nil
}
