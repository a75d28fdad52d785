package dispatch

import (
	"container/heap"
	"sync"
	"time"
)

// maxDueTimes bounds what dueTimes keeps: beyond it, a job's due time is
// left to the idle poll.
const maxDueTimes = 4096

// dueTimes are the times jobs put back to wait here (retries, throttled
// and shed jobs) become due, earliest first.
type dueTimes struct {
	mu sync.Mutex
	h  timeHeap
}

// add notes that a job becomes due at t.
func (q *dueTimes) add(t time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.h) < maxDueTimes {
		heap.Push(&q.h, t.UnixNano())
	}
}

// next is the earliest due time noted.
func (q *dueTimes) next() (time.Time, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.h) == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, q.h[0]), true
}

// pass forgets the due times up to now: a full claim is about to take
// their jobs.
func (q *dueTimes) pass(now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.h) > 0 && q.h[0] <= now.UnixNano() {
		heap.Pop(&q.h)
	}
}

type timeHeap []int64

func (h timeHeap) Len() int           { return len(h) }
func (h timeHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h timeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *timeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
