package consumer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/lerianstudio/streaming-hub/consumer/dedupetest"
)

func TestMemoryDeduperClaimCommit(t *testing.T) {
	d := consumer.NewMemoryDeduper(consumer.MemoryOptions{})
	c := dedupetest.Claim(t, d, "evt-1", consumer.Claimed)
	if c.Token == "" {
		t.Error("a granted claim has no token")
	}
	dedupetest.Claim(t, d, "evt-1", consumer.InProgress)
	dedupetest.Claim(t, d, "evt-2", consumer.Claimed) // keys are independent
	dedupetest.Commit(t, d, c)
	dedupetest.Claim(t, d, "evt-1", consumer.Processed)
	dedupetest.Claim(t, d, "evt-1", consumer.Processed)
}

func TestMemoryDeduperRelease(t *testing.T) {
	d := consumer.NewMemoryDeduper(consumer.MemoryOptions{})
	c := dedupetest.Claim(t, d, "evt-1", consumer.Claimed)
	dedupetest.Release(t, d, c)
	c2 := dedupetest.Claim(t, d, "evt-1", consumer.Claimed) // the retry is processed

	// A stale claim (same key, old token) releases nothing.
	dedupetest.Release(t, d, c)
	dedupetest.Claim(t, d, "evt-1", consumer.InProgress)

	// Release after Commit keeps the event processed.
	dedupetest.Commit(t, d, c2)
	dedupetest.Release(t, d, c2)
	dedupetest.Claim(t, d, "evt-1", consumer.Processed)

	// Commit and Release of a claim that was not granted do nothing.
	busy := dedupetest.Claim(t, d, "evt-3", consumer.Claimed)
	other := dedupetest.Claim(t, d, "evt-3", consumer.InProgress)
	dedupetest.Commit(t, d, other)
	dedupetest.Release(t, d, other)
	dedupetest.Claim(t, d, "evt-3", consumer.InProgress)
	dedupetest.Release(t, d, busy)
	dedupetest.Claim(t, d, "evt-3", consumer.Claimed)
}

func TestMemoryDeduperTTL(t *testing.T) {
	clock := consumer.NewFakeClock()
	d := consumer.NewMemoryDeduper(consumer.MemoryOptions{TTL: time.Hour, Lease: time.Minute, Now: clock.Now})
	c := dedupetest.Claim(t, d, "evt-1", consumer.Claimed)
	dedupetest.Commit(t, d, c)
	clock.Advance(time.Hour - time.Nanosecond)
	dedupetest.Claim(t, d, "evt-1", consumer.Processed)
	clock.Advance(time.Nanosecond)
	dedupetest.Claim(t, d, "evt-1", consumer.Claimed) // forgotten after the TTL
}

func TestMemoryDeduperLease(t *testing.T) {
	clock := consumer.NewFakeClock()
	d := consumer.NewMemoryDeduper(consumer.MemoryOptions{TTL: time.Hour, Lease: time.Minute, Now: clock.Now})
	crashed := dedupetest.Claim(t, d, "evt-1", consumer.Claimed) // its holder never returns
	clock.Advance(time.Minute - time.Nanosecond)
	dedupetest.Claim(t, d, "evt-1", consumer.InProgress)
	clock.Advance(time.Nanosecond)
	retry := dedupetest.Claim(t, d, "evt-1", consumer.Claimed) // the lease expired: a retry processes it

	// The crashed holder's late Release must not free the retry's claim.
	dedupetest.Release(t, d, crashed)
	dedupetest.Claim(t, d, "evt-1", consumer.InProgress)
	dedupetest.Commit(t, d, retry)
	dedupetest.Claim(t, d, "evt-1", consumer.Processed)

	// Commit after the lease expired still records the processing.
	late := dedupetest.Claim(t, d, "evt-2", consumer.Claimed)
	clock.Advance(2 * time.Minute)
	dedupetest.Commit(t, d, late)
	dedupetest.Claim(t, d, "evt-2", consumer.Processed)
}

func TestMemoryDeduperBound(t *testing.T) {
	clock := consumer.NewFakeClock()
	d := consumer.NewMemoryDeduper(consumer.MemoryOptions{MaxEntries: 3, Now: clock.Now})
	for i := range 5 {
		dedupetest.Commit(t, d, dedupetest.Claim(t, d, fmt.Sprintf("evt-%d", i), consumer.Claimed))
		clock.Advance(time.Second)
		if n := d.Len(); n > 3 {
			t.Fatalf("Len = %d after %d events, want <= 3", n, i+1)
		}
	}
	// evt-0 and evt-1 were the oldest: evicted.
	dedupetest.Claim(t, d, "evt-4", consumer.Processed)
	dedupetest.Claim(t, d, "evt-3", consumer.Processed)
	dedupetest.Claim(t, d, "evt-0", consumer.Claimed) // evicts evt-2
	dedupetest.Claim(t, d, "evt-2", consumer.Claimed)
	if n := d.Len(); n != 3 {
		t.Errorf("Len = %d, want 3", n)
	}
}

func TestMemoryDeduperDropsExpired(t *testing.T) {
	clock := consumer.NewFakeClock()
	d := consumer.NewMemoryDeduper(consumer.MemoryOptions{TTL: time.Minute, Now: clock.Now})
	for i := range 10 {
		dedupetest.Commit(t, d, dedupetest.Claim(t, d, fmt.Sprintf("evt-%d", i), consumer.Claimed))
	}
	clock.Advance(time.Minute)
	dedupetest.Claim(t, d, "evt-new", consumer.Claimed)
	if n := d.Len(); n != 1 {
		t.Errorf("Len = %d after every other entry expired, want 1", n)
	}
}

func TestMemoryDeduperConcurrent(t *testing.T) {
	dedupetest.Concurrent(t, consumer.NewMemoryDeduper(consumer.MemoryOptions{}))
}
