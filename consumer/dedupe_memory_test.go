package consumer

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func claim(t *testing.T, d Deduper, key string, want State) Claim {
	t.Helper()
	c, err := d.Claim(context.Background(), key)
	if err != nil {
		t.Fatalf("Claim(%q): %v", key, err)
	}
	if c.State != want {
		t.Fatalf("Claim(%q) = %s, want %s", key, c.State, want)
	}
	return c
}

func commit(t *testing.T, d Deduper, c Claim) {
	t.Helper()
	if err := d.Commit(context.Background(), c); err != nil {
		t.Fatalf("Commit(%q): %v", c.Key, err)
	}
}

func release(t *testing.T, d Deduper, c Claim) {
	t.Helper()
	if err := d.Release(context.Background(), c); err != nil {
		t.Fatalf("Release(%q): %v", c.Key, err)
	}
}

func TestMemoryDeduperClaimCommit(t *testing.T) {
	d := NewMemoryDeduper(MemoryOptions{})
	c := claim(t, d, "evt-1", Claimed)
	if c.Token == "" {
		t.Error("a granted claim has no token")
	}
	claim(t, d, "evt-1", InProgress)
	claim(t, d, "evt-2", Claimed) // keys are independent
	commit(t, d, c)
	claim(t, d, "evt-1", Processed)
	claim(t, d, "evt-1", Processed)
}

func TestMemoryDeduperRelease(t *testing.T) {
	d := NewMemoryDeduper(MemoryOptions{})
	c := claim(t, d, "evt-1", Claimed)
	release(t, d, c)
	c2 := claim(t, d, "evt-1", Claimed) // the retry is processed

	// A stale claim (same key, old token) releases nothing.
	release(t, d, c)
	claim(t, d, "evt-1", InProgress)

	// Release after Commit keeps the event processed.
	commit(t, d, c2)
	release(t, d, c2)
	claim(t, d, "evt-1", Processed)

	// Commit and Release of a claim that was not granted do nothing.
	busy := claim(t, d, "evt-3", Claimed)
	other := claim(t, d, "evt-3", InProgress)
	commit(t, d, other)
	release(t, d, other)
	claim(t, d, "evt-3", InProgress)
	release(t, d, busy)
	claim(t, d, "evt-3", Claimed)
}

func TestMemoryDeduperTTL(t *testing.T) {
	clock := newFakeClock()
	d := NewMemoryDeduper(MemoryOptions{TTL: time.Hour, Lease: time.Minute, Now: clock.Now})
	c := claim(t, d, "evt-1", Claimed)
	commit(t, d, c)
	clock.Advance(time.Hour - time.Nanosecond)
	claim(t, d, "evt-1", Processed)
	clock.Advance(time.Nanosecond)
	claim(t, d, "evt-1", Claimed) // forgotten after the TTL
}

func TestMemoryDeduperLease(t *testing.T) {
	clock := newFakeClock()
	d := NewMemoryDeduper(MemoryOptions{TTL: time.Hour, Lease: time.Minute, Now: clock.Now})
	crashed := claim(t, d, "evt-1", Claimed) // its holder never returns
	clock.Advance(time.Minute - time.Nanosecond)
	claim(t, d, "evt-1", InProgress)
	clock.Advance(time.Nanosecond)
	retry := claim(t, d, "evt-1", Claimed) // the lease expired: a retry processes it

	// The crashed holder's late Release must not free the retry's claim.
	release(t, d, crashed)
	claim(t, d, "evt-1", InProgress)
	commit(t, d, retry)
	claim(t, d, "evt-1", Processed)

	// Commit after the lease expired still records the processing.
	late := claim(t, d, "evt-2", Claimed)
	clock.Advance(2 * time.Minute)
	commit(t, d, late)
	claim(t, d, "evt-2", Processed)
}

func TestMemoryDeduperBound(t *testing.T) {
	clock := newFakeClock()
	d := NewMemoryDeduper(MemoryOptions{MaxEntries: 3, Now: clock.Now})
	for i := range 5 {
		commit(t, d, claim(t, d, fmt.Sprintf("evt-%d", i), Claimed))
		clock.Advance(time.Second)
		if n := d.Len(); n > 3 {
			t.Fatalf("Len = %d after %d events, want <= 3", n, i+1)
		}
	}
	// evt-0 and evt-1 were the oldest: evicted.
	claim(t, d, "evt-4", Processed)
	claim(t, d, "evt-3", Processed)
	claim(t, d, "evt-0", Claimed) // evicts evt-2
	claim(t, d, "evt-2", Claimed)
	if n := d.Len(); n != 3 {
		t.Errorf("Len = %d, want 3", n)
	}
}

func TestMemoryDeduperDropsExpired(t *testing.T) {
	clock := newFakeClock()
	d := NewMemoryDeduper(MemoryOptions{TTL: time.Minute, Now: clock.Now})
	for i := range 10 {
		commit(t, d, claim(t, d, fmt.Sprintf("evt-%d", i), Claimed))
	}
	clock.Advance(time.Minute)
	claim(t, d, "evt-new", Claimed)
	if n := d.Len(); n != 1 {
		t.Errorf("Len = %d after every other entry expired, want 1", n)
	}
}

func TestMemoryDeduperConcurrent(t *testing.T) {
	testConcurrentClaims(t, NewMemoryDeduper(MemoryOptions{}))
}

// testConcurrentClaims races many claims of one key, then many keys: one
// winner per key, whatever the interleaving.
func testConcurrentClaims(t *testing.T, d Deduper) {
	t.Helper()
	const n = 64
	ctx := context.Background()
	var won atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			c, err := d.Claim(ctx, "evt-race")
			if err != nil {
				t.Errorf("Claim: %v", err)
				return
			}
			if c.State == Claimed {
				won.Add(1)
				if err := d.Commit(ctx, c); err != nil {
					t.Errorf("Commit: %v", err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if w := won.Load(); w != 1 {
		t.Fatalf("%d of %d concurrent claims of one key won, want exactly 1", w, n)
	}

	// Many keys, each claimed twice concurrently: exactly one winner per
	// key.
	wins := make([]atomic.Int32, 16)
	for i := range 2 * len(wins) {
		wg.Go(func() {
			key := fmt.Sprintf("evt-%d", i%len(wins))
			c, err := d.Claim(ctx, key)
			if err != nil {
				t.Errorf("Claim: %v", err)
				return
			}
			if c.State == Claimed {
				wins[i%len(wins)].Add(1)
				if err := d.Commit(ctx, c); err != nil {
					t.Errorf("Commit: %v", err)
				}
			}
		})
	}
	wg.Wait()
	for i := range wins {
		if w := wins[i].Load(); w != 1 {
			t.Errorf("key evt-%d: %d winners, want 1", i, w)
		}
	}
}
