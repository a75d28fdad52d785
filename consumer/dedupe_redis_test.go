package consumer

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"
	"time"

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

func newTestRedisDeduper(t *testing.T, o RedisOptions) (*RedisDeduper, *redis.Client) {
	t.Helper()
	rdb, prefix := testRedis(t)
	o.Prefix = prefix
	d, err := NewRedisDeduper(rdb, o)
	if err != nil {
		t.Fatalf("NewRedisDeduper: %v", err)
	}
	return d, rdb
}

func TestRedisDeduperClaimCommit(t *testing.T) {
	d, rdb := newTestRedisDeduper(t, RedisOptions{TTL: time.Hour, Lease: 30 * time.Second})
	ctx := context.Background()
	c := claim(t, d, "tenant-a/evt-1", Claimed)
	claim(t, d, "tenant-a/evt-1", InProgress)
	claim(t, d, "tenant-b/evt-1", Claimed) // another tenant's event

	// The claim is a key with the lease as its expiry.
	key := d.prefix + "tenant-a/evt-1"
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > 30*time.Second {
		t.Errorf("PTTL of a claim = %s, want (0, 30s]", ttl)
	}
	commit(t, d, c)
	claim(t, d, "tenant-a/evt-1", Processed)
	if v := rdb.Get(ctx, key).Val(); v != redisDone {
		t.Errorf("value of a processed key = %q, want %q", v, redisDone)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 30*time.Second || ttl > time.Hour {
		t.Errorf("PTTL of a processed key = %s, want (30s, 1h]", ttl)
	}
}

func TestRedisDeduperRelease(t *testing.T) {
	d, _ := newTestRedisDeduper(t, RedisOptions{})
	c := claim(t, d, "evt-1", Claimed)
	release(t, d, c)
	c2 := claim(t, d, "evt-1", Claimed)
	release(t, d, c) // stale token: nothing happens
	claim(t, d, "evt-1", InProgress)
	commit(t, d, c2)
	release(t, d, c2) // after Commit: nothing happens
	claim(t, d, "evt-1", Processed)

	other := claim(t, d, "evt-2", Claimed)
	busy := claim(t, d, "evt-2", InProgress)
	commit(t, d, busy) // not granted: nothing happens
	claim(t, d, "evt-2", InProgress)
	release(t, d, other)
	claim(t, d, "evt-2", Claimed)
}

func TestRedisDeduperExpiry(t *testing.T) {
	d, _ := newTestRedisDeduper(t, RedisOptions{TTL: 100 * time.Millisecond, Lease: 100 * time.Millisecond})
	commit(t, d, claim(t, d, "evt-done", Claimed))
	claim(t, d, "evt-crashed", Claimed) // never committed nor released
	claim(t, d, "evt-done", Processed)
	claim(t, d, "evt-crashed", InProgress)
	time.Sleep(150 * time.Millisecond) // Redis's clock, not ours
	claim(t, d, "evt-done", Claimed)
	claim(t, d, "evt-crashed", Claimed)
}

func TestRedisDeduperConcurrent(t *testing.T) {
	d, _ := newTestRedisDeduper(t, RedisOptions{})
	testConcurrentClaims(t, d)
}

func TestNewRedisDeduper(t *testing.T) {
	if _, err := NewRedisDeduper(nil, RedisOptions{}); err == nil {
		t.Error("NewRedisDeduper(nil) succeeded")
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:0"}) // never dialed
	defer rdb.Close()
	if _, err := NewRedisDeduper(rdb, RedisOptions{TTL: -time.Second}); err == nil {
		t.Error("negative TTL accepted")
	}
	d, err := NewRedisDeduper(rdb, RedisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.prefix != DefaultRedisPrefix || d.ttl != DefaultDedupeTTL || d.lease != DefaultLease {
		t.Errorf("defaults = %q %s %s", d.prefix, d.ttl, d.lease)
	}
}
