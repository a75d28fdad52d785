package transform

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// The rules of fair.go on their own, with a clock of the test's: who a
// free worker goes to, who waits, and for how long.

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// asking is one acquire under way.
type asking struct {
	g   chan *grant
	err chan error
}

func ask(f *fair, c Caller) asking {
	a := asking{g: make(chan *grant, 1), err: make(chan error, 1)}
	go func() {
		g, err := f.acquire(context.Background(), c)
		if err != nil {
			a.err <- err
			return
		}
		a.g <- g
	}()
	return a
}

// granted waits for a's grant.
func (a asking) granted(t *testing.T, what string) *grant {
	t.Helper()
	select {
	case g := <-a.g:
		return g
	case err := <-a.err:
		t.Fatalf("%s: %v", what, err)
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not granted", what)
	}
	return nil
}

// waits checks that a is still waiting, a moment later.
func (a asking) waits(t *testing.T, what string) {
	t.Helper()
	select {
	case <-a.g:
		t.Fatalf("%s: granted, want it to wait", what)
	case err := <-a.err:
		t.Fatalf("%s: %v, want it to wait", what, err)
	case <-time.After(50 * time.Millisecond):
	}
}

// queued waits until f has n waiters.
func queued(t *testing.T, f *fair, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		got := 0
		for s := range f.queued {
			got += len(s.queue[0]) + len(s.queue[1])
		}
		f.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func newTestFair(size int) (*fair, *clock) {
	c := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return newFair(size, time.Minute, c.Now), c
}

var (
	hostile = Caller{Tenant: "hostile"}
	honest  = Caller{Tenant: "honest"}
)

// A tenant whose program hit its limit holds one worker of two while
// another tenant is about: the other worker stays for the others, even
// idle, and the heavy tenant's next run waits for its own to end.
func TestFair_ATenantHittingItsLimitsNeverHoldsEveryWorker(t *testing.T) {
	f, clk := newTestFair(2)
	h := ask(f, honest).granted(t, "honest")
	h.release()
	g := ask(f, hostile).granted(t, "hostile's first run")
	g.limit()
	g.release()
	clk.Add(time.Second)

	g1 := ask(f, hostile).granted(t, "hostile, one worker")
	// Its second delivery is refused at once (retried on its schedule,
	// not holding a dispatcher's worker); a preview waits for its turn.
	start := time.Now()
	if _, err := f.acquire(context.Background(), hostile); !errors.Is(err, ErrHeld) || time.Since(start) > time.Second {
		t.Fatalf("hostile's second delivery: %v after %s, want ErrHeld at once", err, time.Since(start))
	}
	second := ask(f, Caller{Tenant: "hostile", Preview: true})
	second.waits(t, "hostile, a second worker while honest is about")
	h = ask(f, honest).granted(t, "honest, the worker kept free")
	h.release()
	g1.release()
	second.granted(t, "hostile's preview, once its first run ended").release()

	// Alone (nobody else about for a while), it may use every worker.
	clk.Add(activeFor)
	g.limit()
	a, b := ask(f, hostile).granted(t, "alone, one"), ask(f, hostile).granted(t, "alone, two")
	a.release()
	b.release()
	// Its limits are forgotten after heavyFor: two workers again.
	clk.Add(heavyFor)
	ask(f, honest).granted(t, "honest").release()
	a, b = ask(f, hostile).granted(t, "forgiven, one"), ask(f, hostile).granted(t, "forgiven, two")
	a.release()
	b.release()
}

// A free worker goes to the tenant that used the workers least lately,
// whoever asked first.
func TestFair_TheTenantThatUsedTheWorkersLeastGoesFirst(t *testing.T) {
	f, clk := newTestFair(2)
	a, b := ask(f, hostile).granted(t, "one"), ask(f, hostile).granted(t, "two")
	clk.Add(3 * time.Second)
	more := ask(f, hostile)
	queued(t, f, 1)
	other := ask(f, honest)
	queued(t, f, 2)
	a.release() // hostile has used 3s: honest goes first
	other.granted(t, "honest, asked second").release()
	more.granted(t, "hostile's next, after honest").release()
	b.release()
}

// One tenant's previews never hold every worker: its deliveries, and
// everyone else's, always find one within a run.
func TestFair_PreviewsNeverHoldEveryWorker(t *testing.T) {
	f, _ := newTestFair(2)
	preview := Caller{Tenant: "acme", Preview: true}
	p1 := ask(f, preview).granted(t, "first preview")
	p2 := ask(f, preview)
	p2.waits(t, "second preview while the first runs")
	d := ask(f, Caller{Tenant: "acme"}).granted(t, "acme's delivery")
	other := ask(f, Caller{Tenant: "other"})
	other.waits(t, "another tenant, both workers busy")
	d.release()
	other.granted(t, "another tenant, after the delivery").release()
	p2.waits(t, "second preview, the first still running")
	p1.release()
	p2.granted(t, "second preview").release()
}

func TestFair_DeliveriesGoBeforeTheSameTenantsPreviews(t *testing.T) {
	f, _ := newTestFair(1)
	g := ask(f, Caller{Tenant: "acme"}).granted(t, "first")
	p := ask(f, Caller{Tenant: "acme", Preview: true})
	queued(t, f, 1)
	d := ask(f, Caller{Tenant: "acme"})
	queued(t, f, 2)
	g.release()
	d.granted(t, "the delivery").release()
	p.granted(t, "the preview").release()
}

// The wait for a worker is bounded: past it the run fails, naming the
// limit, and leaves the queue.
func TestFair_TheWaitForAWorkerIsBounded(t *testing.T) {
	c := &clock{now: time.Now()}
	f := newFair(1, 100*time.Millisecond, c.Now)
	g := ask(f, hostile).granted(t, "first")
	start := time.Now()
	_, err := f.acquire(context.Background(), honest)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "transform_limit") || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("got %v after %s, want ErrBusy after the bound", err, time.Since(start))
	}
	queued(t, f, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.acquire(ctx, honest); err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("a cancelled wait: %v", err)
	}
	queued(t, f, 0)
	g.release()
	ask(f, honest).granted(t, "after the release").release()
}
