// Package redisdedupe is a consumer.Deduper in Redis, shared by every
// instance of a receiver. It is apart from consumer so that a receiver that
// does not use Redis does not build go-redis.
package redisdedupe

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/lerianstudio/streaming-hub/consumer"
	"github.com/redis/go-redis/v9"
)

// DefaultPrefix starts the Deduper's keys when no prefix is given.
const DefaultPrefix = "streaming-hub:seen:"

// done is the value of a processed key; a claimed key holds its token.
const done = "done"

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

// Options configure a Deduper. Zero values mean the defaults.
type Options struct {
	Prefix string        // key prefix (DefaultPrefix); the key is Prefix + dedupe key
	TTL    time.Duration // how long a processed key is remembered (consumer.DefaultDedupeTTL)
	Lease  time.Duration // how long a claim lives without Commit/Release (consumer.DefaultLease)
}

// Deduper is a Deduper in Redis, shared by every instance of a
// receiver. Each key is one string with an expiry: a claim token for the
// lease, then "done" for the TTL. Expiry runs on Redis's clock, so instances
// need not agree on time.
type Deduper struct {
	rdb        redis.UniversalClient
	prefix     string
	ttl, lease time.Duration
}

// New returns a Deduper on rdb (a *redis.Client,
// *redis.ClusterClient or *redis.Ring).
func New(rdb redis.UniversalClient, o Options) (*Deduper, error) {
	if rdb == nil {
		return nil, errors.New("redisdedupe: redis deduper: nil client")
	}
	if o.TTL < 0 || o.Lease < 0 {
		return nil, fmt.Errorf("redisdedupe: redis deduper: negative TTL %s or lease %s", o.TTL, o.Lease)
	}
	d := &Deduper{rdb: rdb, prefix: o.Prefix, ttl: o.TTL, lease: o.Lease}
	if d.prefix == "" {
		d.prefix = DefaultPrefix
	}
	if d.ttl == 0 {
		d.ttl = consumer.DefaultDedupeTTL
	}
	if d.lease == 0 {
		d.lease = consumer.DefaultLease
	}
	return d, nil
}

// Claim implements consumer.Deduper with SET key token NX PX lease; when the key
// exists, its value tells a claim from a processed event.
func (d *Deduper) Claim(ctx context.Context, key string) (consumer.Claim, error) {
	k := d.prefix + key
	token := rand.Text()
	for range claimAttempts {
		ok, err := d.rdb.SetNX(ctx, k, token, d.lease).Result()
		if err != nil {
			return consumer.Claim{}, fmt.Errorf("redisdedupe: claim %s: %w", k, err)
		}
		if ok {
			return consumer.Claim{Key: key, State: consumer.Claimed, Token: token}, nil
		}
		v, err := d.rdb.Get(ctx, k).Result()
		switch {
		case errors.Is(err, redis.Nil):
			continue // released or expired since the SET: try again
		case err != nil:
			return consumer.Claim{}, fmt.Errorf("redisdedupe: claim %s: %w", k, err)
		case v == done:
			return consumer.Claim{Key: key, State: consumer.Processed}, nil
		default:
			return consumer.Claim{Key: key, State: consumer.InProgress}, nil
		}
	}
	// The key keeps flipping: other deliveries are busy with it. Let the
	// hub retry rather than spin.
	return consumer.Claim{Key: key, State: consumer.InProgress}, nil
}

// Commit implements consumer.Deduper: SET key done PX ttl, whoever holds the key
// now, since the event was processed.
func (d *Deduper) Commit(ctx context.Context, c consumer.Claim) error {
	if c.State != consumer.Claimed {
		return nil
	}
	k := d.prefix + c.Key
	if err := d.rdb.Set(ctx, k, done, d.ttl).Err(); err != nil {
		return fmt.Errorf("redisdedupe: commit %s: %w", k, err)
	}
	return nil
}

// Release implements consumer.Deduper: deletes the key if it still holds this
// claim's token.
func (d *Deduper) Release(ctx context.Context, c consumer.Claim) error {
	if c.State != consumer.Claimed {
		return nil
	}
	k := d.prefix + c.Key
	if err := releaseScript.Run(ctx, d.rdb, []string{k}, c.Token).Err(); err != nil {
		return fmt.Errorf("redisdedupe: release %s: %w", k, err)
	}
	return nil
}
