package testkit

import (
	"sync"
	"sync/atomic"
	"time"
)

// Overlap measures how many callers are inside a section at once, to show
// that a lock lets one replica in at a time. The first caller to enter
// waits (up to Patience) until Contend is called, so that another replica
// has its chance to overlap it: a test that never contended proves nothing.
type Overlap struct {
	now, most atomic.Int32
	first     sync.Once
	contend   sync.Once
	contended chan struct{}
}

func NewOverlap() *Overlap { return &Overlap{contended: make(chan struct{})} }

// Enter counts a caller in; the function it returns counts it out.
func (o *Overlap) Enter() (leave func()) {
	n := o.now.Add(1)
	for m := o.most.Load(); n > m && !o.most.CompareAndSwap(m, n); m = o.most.Load() {
	}
	o.first.Do(func() {
		select {
		case <-o.contended:
		case <-time.After(Patience):
		}
	})
	return func() { o.now.Add(-1) }
}

// Contend says another replica was refused: the first caller goes on.
func (o *Overlap) Contend() { o.contend.Do(func() { close(o.contended) }) }

// Most is the most callers there were inside at once.
func (o *Overlap) Most() int32 { return o.most.Load() }
