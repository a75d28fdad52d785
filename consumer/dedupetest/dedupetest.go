// Package dedupetest holds the checks every consumer.Deduper must pass, so
// the memory deduper, the Redis one and a receiver's own are held to one
// contract.
package dedupetest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lerianstudio/streaming-hub/consumer"
)

// Claim claims key and fails the test unless the claim's state is want.
func Claim(t testing.TB, d consumer.Deduper, key string, want consumer.State) consumer.Claim {
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

// Commit commits c and fails the test on an error.
func Commit(t testing.TB, d consumer.Deduper, c consumer.Claim) {
	t.Helper()
	if err := d.Commit(context.Background(), c); err != nil {
		t.Fatalf("Commit(%q): %v", c.Key, err)
	}
}

// Release releases c and fails the test on an error.
func Release(t testing.TB, d consumer.Deduper, c consumer.Claim) {
	t.Helper()
	if err := d.Release(context.Background(), c); err != nil {
		t.Fatalf("Release(%q): %v", c.Key, err)
	}
}

// Concurrent races many claims of one key, then many keys: one
// winner per key, whatever the interleaving.
func Concurrent(t testing.TB, d consumer.Deduper) {
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
			if c.State == consumer.Claimed {
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
			if c.State == consumer.Claimed {
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
