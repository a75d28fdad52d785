package consumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisPrefix starts the RedisDeduper's keys when no prefix is given.
const DefaultRedisPrefix = "streaming-hub:seen:"

// redisDone is the value of a processed key; a claimed key holds its token.
const redisDone = "done"

// claimAttempts bounds Claim's loop when the key vanishes between the
// SET NX that found it and the GET that reads it.
const claimAttempts = 3

// releaseScript deletes a key only while it holds the caller's claim token,
// atomically: a GET then DEL from the client could delete a claim another
// delivery took in between.
var releaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0`)

// RedisOptions configure a RedisDeduper. Zero values mean the defaults.
type RedisOptions struct {
	Prefix string        // key prefix (DefaultRedisPrefix); the key is Prefix + dedupe key
	TTL    time.Duration // how long a processed key is remembered (DefaultDedupeTTL)
	Lease  time.Duration // how long a claim lives without Commit/Release (DefaultLease)
}

// RedisDeduper is a Deduper in Redis, shared by every instance of a
// receiver. Each key is one string with an expiry: a claim token for the
// lease, then "done" for the TTL. Expiry runs on Redis's clock, so instances
// need not agree on time.
type RedisDeduper struct {
	rdb        redis.UniversalClient
	prefix     string
	ttl, lease time.Duration
}

// NewRedisDeduper returns a RedisDeduper on rdb (a *redis.Client,
// *redis.ClusterClient or *redis.Ring).
func NewRedisDeduper(rdb redis.UniversalClient, o RedisOptions) (*RedisDeduper, error) {
	if rdb == nil {
		return nil, errors.New("consumer: redis deduper: nil client")
	}
	if o.TTL < 0 || o.Lease < 0 {
		return nil, fmt.Errorf("consumer: redis deduper: negative TTL %s or lease %s", o.TTL, o.Lease)
	}
	d := &RedisDeduper{rdb: rdb, prefix: o.Prefix, ttl: o.TTL, lease: o.Lease}
	if d.prefix == "" {
		d.prefix = DefaultRedisPrefix
	}
	if d.ttl == 0 {
		d.ttl = DefaultDedupeTTL
	}
	if d.lease == 0 {
		d.lease = DefaultLease
	}
	return d, nil
}

// Claim implements Deduper with SET key token NX PX lease; when the key
// exists, its value tells a claim from a processed event.
func (d *RedisDeduper) Claim(ctx context.Context, key string) (Claim, error) {
	k := d.prefix + key
	token := newToken()
	for range claimAttempts {
		ok, err := d.rdb.SetNX(ctx, k, token, d.lease).Result()
		if err != nil {
			return Claim{}, fmt.Errorf("consumer: claim %s: %w", k, err)
		}
		if ok {
			return Claim{Key: key, State: Claimed, Token: token}, nil
		}
		v, err := d.rdb.Get(ctx, k).Result()
		switch {
		case errors.Is(err, redis.Nil):
			continue // released or expired since the SET: try again
		case err != nil:
			return Claim{}, fmt.Errorf("consumer: claim %s: %w", k, err)
		case v == redisDone:
			return Claim{Key: key, State: Processed}, nil
		default:
			return Claim{Key: key, State: InProgress}, nil
		}
	}
	// The key keeps flipping: other deliveries are busy with it. Let the
	// hub retry rather than spin.
	return Claim{Key: key, State: InProgress}, nil
}

// Commit implements Deduper: SET key done PX ttl, whoever holds the key
// now, since the event was processed.
func (d *RedisDeduper) Commit(ctx context.Context, c Claim) error {
	if c.State != Claimed {
		return nil
	}
	k := d.prefix + c.Key
	if err := d.rdb.Set(ctx, k, redisDone, d.ttl).Err(); err != nil {
		return fmt.Errorf("consumer: commit %s: %w", k, err)
	}
	return nil
}

// Release implements Deduper: deletes the key if it still holds this
// claim's token.
func (d *RedisDeduper) Release(ctx context.Context, c Claim) error {
	if c.State != Claimed {
		return nil
	}
	k := d.prefix + c.Key
	if err := releaseScript.Run(ctx, d.rdb, []string{k}, c.Token).Err(); err != nil {
		return fmt.Errorf("consumer: release %s: %w", k, err)
	}
	return nil
}
