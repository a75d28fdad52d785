package destination_test

import (
	"errors"
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
