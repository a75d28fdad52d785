// Package keyspace is the Redis key layout of the event-notification example:
// one place that names every key, so the payments store, the receivers, the
// tests and the demo cannot disagree about where things live.
//
// Every key of one layout shares the hash tag {name}. In Redis Cluster that
// puts the payment hashes, the notification stream and its dead-letter stream
// in one slot, which is what lets a single Lua script write a payment and its
// notification together. On a standalone Redis the tag is harmless.
package keyspace

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Layout names the keys of one isolated keyspace (one per test or demo run).
type Layout struct {
	name string
}

// New returns the layout for name. The name becomes a Redis hash tag and a
// SCAN pattern, so it is restricted to characters that are literal in both.
func New(name string) (Layout, error) {
	if name == "" || len(name) > 128 {
		return Layout{}, fmt.Errorf("keyspace name must be 1..128 characters, got %d", len(name))
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return Layout{}, fmt.Errorf("keyspace name %q: only [A-Za-z0-9._-] allowed", name)
		}
	}
	return Layout{name: name}, nil
}

// Name is the name the layout was built from.
func (l Layout) Name() string { return l.name }

// Prefix is what every key of the layout starts with: "{name}:".
func (l Layout) Prefix() string { return "{" + l.name + "}:" }

// Payment is the Hash holding one payment's current state and version.
func (l Layout) Payment(id string) string { return l.Prefix() + "payment:" + id }

// Stream is the notification stream every receiver group reads.
func (l Layout) Stream() string { return l.Prefix() + "payments:events" }

// DeadLetter is where entries that keep failing are parked: <stream>.dlq.
func (l Layout) DeadLetter() string { return DeadLetterOf(l.Stream()) }

// DeadLetterOf names the dead-letter stream of any stream.
func DeadLetterOf(stream string) string { return stream + ".dlq" }

// ApprovalsDay is the Set of approval event ids seen on day (YYYY-MM-DD).
func (l Layout) ApprovalsDay(day string) string {
	return l.Prefix() + "approvals:" + day + ":events"
}

// DeleteAll removes every key of the layout and returns how many it removed.
// Tests and the demo call it on the way out so runs leave nothing behind.
func DeleteAll(ctx context.Context, rdb redis.UniversalClient, l Layout) (int, error) {
	if l.name == "" {
		return 0, fmt.Errorf("refusing to delete with an empty layout")
	}
	pattern := l.Prefix() + "*"
	deleted := 0
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, pattern, 200).Result()
		if err != nil {
			return deleted, fmt.Errorf("scan %s: %w", pattern, err)
		}
		if len(keys) > 0 {
			// Keys can only match the pattern if they start with the prefix;
			// checking again guards against a pattern ever being widened.
			for _, k := range keys {
				if !strings.HasPrefix(k, l.Prefix()) {
					return deleted, fmt.Errorf("scan returned foreign key %q", k)
				}
			}
			n, err := rdb.Del(ctx, keys...).Result()
			if err != nil {
				return deleted, fmt.Errorf("delete %d keys of %s: %w", len(keys), l.Prefix(), err)
			}
			deleted += int(n)
		}
		if next == 0 {
			return deleted, nil
		}
		cursor = next
	}
}
