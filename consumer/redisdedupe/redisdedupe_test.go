package redisdedupe

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/lerianstudio/streaming-hub/consumer/dedupetest"
	"github.com/redis/go-redis/v9"
)

// testRedis connects to STREAMING_HUB_TEST_REDIS_URL and returns a key
// prefix of the test's own, whose keys are deleted when it ends.
func testRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	url := os.Getenv("STREAMING_HUB_TEST_REDIS_URL")
	if url == "" {
		t.Skip("STREAMING_HUB_TEST_REDIS_URL not set: skipping Redis test")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("STREAMING_HUB_TEST_REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opt)
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		t.Fatalf("redis at STREAMING_HUB_TEST_REDIS_URL: %v", err)
	}
	prefix := "streaming-hub-test:consumer:" + strings.ToLower(rand.Text()) + ":"
	t.Cleanup(func() {
		defer rdb.Close()
		var keys []string
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("cleanup: scan %s*: %v", prefix, err)
		}
		if len(keys) > 0 {
			if err := rdb.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("cleanup: del: %v", err)
			}
		}
	})
	return rdb, prefix
}

func newTest(t *testing.T, o Options) (*Deduper, *redis.Client) {
	t.Helper()
	rdb, prefix := testRedis(t)
	o.Prefix = prefix
	d, err := New(rdb, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d, rdb
}

func TestClaimCommit(t *testing.T) {
	d, rdb := newTest(t, Options{TTL: time.Hour, Lease: 30 * time.Second})
	ctx := context.Background()
	c := dedupetest.Claim(t, d, "tenant-a/evt-1", consumer.Claimed)
	dedupetest.Claim(t, d, "tenant-a/evt-1", consumer.InProgress)
	dedupetest.Claim(t, d, "tenant-b/evt-1", consumer.Claimed) // another tenant's event

	// The claim is a key with the lease as its expiry.
	key := d.prefix + "tenant-a/evt-1"
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > 30*time.Second {
		t.Errorf("PTTL of a claim = %s, want (0, 30s]", ttl)
	}
	dedupetest.Commit(t, d, c)
	dedupetest.Claim(t, d, "tenant-a/evt-1", consumer.Processed)
	if v := rdb.Get(ctx, key).Val(); v != done {
		t.Errorf("value of a processed key = %q, want %q", v, done)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 30*time.Second || ttl > time.Hour {
		t.Errorf("PTTL of a processed key = %s, want (30s, 1h]", ttl)
	}
}

func TestRelease(t *testing.T) {
	d, _ := newTest(t, Options{})
	c := dedupetest.Claim(t, d, "evt-1", consumer.Claimed)
	dedupetest.Release(t, d, c)
	c2 := dedupetest.Claim(t, d, "evt-1", consumer.Claimed)
	dedupetest.Release(t, d, c) // stale token: nothing happens
	dedupetest.Claim(t, d, "evt-1", consumer.InProgress)
	dedupetest.Commit(t, d, c2)
	dedupetest.Release(t, d, c2) // after Commit: nothing happens
	dedupetest.Claim(t, d, "evt-1", consumer.Processed)

	other := dedupetest.Claim(t, d, "evt-2", consumer.Claimed)
	busy := dedupetest.Claim(t, d, "evt-2", consumer.InProgress)
	dedupetest.Commit(t, d, busy) // not granted: nothing happens
	dedupetest.Claim(t, d, "evt-2", consumer.InProgress)
	dedupetest.Release(t, d, other)
	dedupetest.Claim(t, d, "evt-2", consumer.Claimed)
}

// Keys expire on Redis's clock, which no test moves: the TTLs are long
// while the states are read (a slow machine cannot outlast them), then the
// keys are made to expire at once. That the TTL and the lease are the keys'
// expiries is TestClaimCommit's PTTL check.
func TestExpiry(t *testing.T) {
	d, rdb := newTest(t, Options{TTL: time.Hour, Lease: time.Hour})
	ctx := context.Background()
	dedupetest.Commit(t, d, dedupetest.Claim(t, d, "evt-done", consumer.Claimed))
	dedupetest.Claim(t, d, "evt-crashed", consumer.Claimed) // never committed nor released
	dedupetest.Claim(t, d, "evt-done", consumer.Processed)
	dedupetest.Claim(t, d, "evt-crashed", consumer.InProgress)
	keys := []string{d.prefix + "evt-done", d.prefix + "evt-crashed"}
	for _, k := range keys {
		if !rdb.PExpire(ctx, k, time.Millisecond).Val() {
			t.Fatalf("no key %s to expire", k)
		}
	}
	for deadline := time.Now().Add(2 * time.Minute); rdb.Exists(ctx, keys...).Val() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("Redis never expired the keys")
		}
	}
	dedupetest.Claim(t, d, "evt-done", consumer.Claimed)
	dedupetest.Claim(t, d, "evt-crashed", consumer.Claimed)
}

func TestConcurrent(t *testing.T) {
	d, _ := newTest(t, Options{})
	dedupetest.Concurrent(t, d)
}

func TestNew(t *testing.T) {
	if _, err := New(nil, Options{}); err == nil {
		t.Error("New(nil) succeeded")
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"}) // never dialed
	defer rdb.Close()
	if _, err := New(rdb, Options{TTL: -time.Second}); err == nil {
		t.Error("negative TTL accepted")
	}
	d, err := New(rdb, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.prefix != DefaultPrefix || d.ttl != consumer.DefaultDedupeTTL || d.lease != consumer.DefaultLease {
		t.Errorf("defaults = %q %s %s", d.prefix, d.ttl, d.lease)
	}
}
