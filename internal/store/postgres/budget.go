package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// budgets are the semaphores that keep each part of the process within its
// share of the pool (store.SplitPool): a call takes one slot of its
// budget for as long as it runs, and waits while the budget is full.
type budgets struct {
	slots  map[store.Budget]chan struct{}
	inUse  map[store.Budget]*atomic.Int64
	onWait func(store.Budget, time.Duration)
}

func newBudgets(shares store.Shares, onWait func(store.Budget, time.Duration)) *budgets {
	b := &budgets{slots: make(map[store.Budget]chan struct{}), inUse: make(map[store.Budget]*atomic.Int64), onWait: onWait}
	for _, k := range store.Budgets {
		if n := shares[k]; n > 0 {
			b.slots[k] = make(chan struct{}, n)
		}
		b.inUse[k] = new(atomic.Int64)
	}
	return b
}

// use takes a slot of budget k (of the API's when the process has no share
// for k) and returns its release. When ctx ends first it returns at once:
// the call then fails on its first statement with ctx's error.
func (b *budgets) use(ctx context.Context, k store.Budget) (release func()) {
	slots, ok := b.slots[k]
	if !ok {
		k, slots = store.BudgetAPI, b.slots[store.BudgetAPI]
	}
	var waited time.Duration // 0 when a slot was free
	select {
	case slots <- struct{}{}:
	default:
		start := time.Now()
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return func() {}
		}
		waited = time.Since(start)
	}
	if b.onWait != nil {
		b.onWait(k, waited)
	}
	n := b.inUse[k]
	n.Add(1)
	return func() {
		n.Add(-1)
		<-slots
	}
}

// stats reports each budget's share and the slots it holds now.
func (b *budgets) stats() map[store.Budget]store.BudgetStats {
	out := make(map[store.Budget]store.BudgetStats, len(b.slots))
	for k, slots := range b.slots {
		out[k] = store.BudgetStats{Share: cap(slots), InUse: int(b.inUse[k].Load())}
	}
	return out
}

// PoolStats is a snapshot of the pool and its budgets.
func (db *DB) PoolStats() store.PoolStats {
	s := db.pool.Stat()
	return store.PoolStats{Max: int(s.MaxConns()), Idle: int(s.IdleConns()), InUse: int(s.AcquiredConns()),
		Budgets: db.budgets.stats()}
}
