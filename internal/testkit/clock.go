package testkit

import (
	"sync"
	"time"
)

// Clock is a fake clock: it moves only when told to.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts a fake clock at a fixed, readable instant.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
