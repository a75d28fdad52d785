package destination_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// conn stands for a broker connection: the pool's logic is the same
// whatever it holds (the drivers' tests use real brokers).
type conn struct{ name string }

type closes struct {
	mu  sync.Mutex
	got []string
}

func (c *closes) close(v *conn) {
	c.mu.Lock()
	c.got = append(c.got, v.name)
	c.mu.Unlock()
}

func (c *closes) names() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

// A connection unused for IdleAfter is closed on the way to a later send
// (at most one sweep a minute); one with a send in flight never is, however
// long that send takes; one in use is kept and reused.
func TestPool_ClosesIdleConnectionsButNeverOneInUse(t *testing.T) {
	clock := testkit.NewClock()
	cl := &closes{}
	p := destination.NewPool(clock.Now, cl.close)
	opened := 0
	open := func(name string) func() (*conn, error) {
		return func() (*conn, error) { opened++; return &conn{name: name}, nil }
	}
	acquire := func(key string) (*conn, func()) {
		t.Helper()
		v, release, err := p.Acquire(key, open(key))
		if err != nil {
			t.Fatal(err)
		}
		return v, release
	}
	_, releaseOld := acquire("old-password")
	releaseOld()
	_, releaseSlow := acquire("slow") // a send that does not end
	busy, releaseBusy := acquire("busy")
	releaseBusy()

	for range 9 { // 9 minutes: busy keeps sending, nothing is idle long enough
		clock.Advance(time.Minute)
		v, release := acquire("busy")
		if v != busy {
			t.Fatal("a connection in use was not reused")
		}
		release()
	}
	if got := cl.names(); len(got) != 0 || p.Len() != 3 {
		t.Fatalf("closed %v (%d kept) before anything was idle for %s", got, p.Len(), destination.IdleAfter)
	}
	clock.Advance(time.Minute + time.Second) // old-password idle 10 min 1 s
	_, release := acquire("busy")
	release()
	testkit.WaitFor(t, "the idle connection closed", func() bool { return len(cl.names()) == 1 })
	if got := cl.names(); got[0] != "old-password" || p.Len() != 2 {
		t.Fatalf("closed %v, %d kept; want old-password closed, busy and slow kept", got, p.Len())
	}
	// A later send to it opens a new one.
	before := opened
	_, release = acquire("old-password")
	release()
	if opened != before+1 {
		t.Fatal("no new connection for a destination whose idle one was closed")
	}
	releaseSlow()

	p.Close()
	testkit.WaitFor(t, "every connection closed", func() bool { return len(cl.names()) == 4 })
	if _, _, err := p.Acquire("busy", open("busy")); !errors.Is(err, destination.ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
}

// A discarded connection leaves the pool at once (the next send opens a
// new one) but is closed only when the last send in flight on it is over;
// a discard of a connection already replaced leaves the new one alone.
func TestPool_DiscardClosesOnceTheSendsInFlightAreOver(t *testing.T) {
	clock := testkit.NewClock()
	cl := &closes{}
	p := destination.NewPool(clock.Now, cl.close)
	generation := 0
	open := func() (*conn, error) { generation++; return &conn{name: fmt.Sprintf("gen-%d", generation)}, nil }
	acquire := func() (*conn, func()) {
		t.Helper()
		v, release, err := p.Acquire("broker", open)
		if err != nil {
			t.Fatal(err)
		}
		return v, release
	}
	first, releaseA := acquire()
	_, releaseB := acquire() // two sends in flight on first
	if !p.Discard("broker", first) {
		t.Fatal("Discard of the pool's connection reported it was not there")
	}
	second, releaseC := acquire()
	if second == first || second.name != "gen-2" {
		t.Fatalf("after a discard the next send got %s, want a new connection", second.name)
	}
	if p.Discard("broker", first) {
		t.Fatal("a second discard of the old connection took the new one out")
	}
	releaseA()
	clock.Advance(destination.IdleAfter + time.Minute) // the sweep does not close a discarded one either
	_, releaseD := acquire()
	releaseD()
	if got := cl.names(); len(got) != 0 {
		t.Fatalf("closed %v with a send still in flight on gen-1", got)
	}
	releaseB()
	testkit.WaitFor(t, "gen-1 closed after its last send", func() bool { return len(cl.names()) == 1 })
	releaseC()

	// Nothing in flight: closed at once; and each connection exactly once.
	if !p.Discard("broker", second) {
		t.Fatal("Discard of an idle connection reported it was not there")
	}
	testkit.WaitFor(t, "gen-2 closed", func() bool { return len(cl.names()) == 2 })
	third, release := acquire()
	if third.name != "gen-3" || p.Len() != 1 {
		t.Fatalf("got %s with %d kept, want gen-3 alone", third.name, p.Len())
	}
	release()
	p.Close()
	testkit.WaitFor(t, "gen-3 closed by Close", func() bool { return len(cl.names()) == 3 })
	if got := cl.names(); fmt.Sprint(got) != "[gen-1 gen-2 gen-3]" {
		t.Fatalf("closed %v, want each generation once, in order", got)
	}
}
