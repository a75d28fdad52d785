package receivers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/keyspace"
	"github.com/lerianstudio/streaming-hub/examples/event-notification/notify"
)

// CounterGroup is the approvals counter's consumer group.
const CounterGroup = "approvals-counter"

// DefaultCounterTTL keeps a day's set long enough for late redeliveries and
// reports, then lets Redis drop it.
const DefaultCounterTTL = 8 * 24 * time.Hour

// Counter counts the day's approvals from the notifications alone: it has no
// payments client at all, so it cannot call the source even by mistake.
//
// It adds each approval's event id to a per-day Set and counts with SCARD. A
// redelivered event adds an id already present, so it counts once.
type Counter struct {
	rdb  redis.UniversalClient
	keys keyspace.Layout
	loc  *time.Location
	ttl  time.Duration
}

// NewCounter returns a counter. loc decides which day an approval belongs to
// (nil means UTC; a Brazilian bank would pass America/Sao_Paulo); ttl is how
// long a day's set lives (0 means DefaultCounterTTL).
func NewCounter(rdb redis.UniversalClient, keys keyspace.Layout, loc *time.Location, ttl time.Duration) (*Counter, error) {
	if rdb == nil {
		return nil, errors.New("counter: redis client is required")
	}
	if ttl < 0 {
		return nil, fmt.Errorf("counter: ttl %s must be >= 0", ttl)
	}
	if loc == nil {
		loc = time.UTC
	}
	if ttl == 0 {
		ttl = DefaultCounterTTL
	}
	return &Counter{rdb: rdb, keys: keys, loc: loc, ttl: ttl}, nil
}

// Day formats t as the counter's day key component.
func (c *Counter) Day(t time.Time) string { return t.In(c.loc).Format(time.DateOnly) }

// Handle implements notify.Handler. The day is the event's time, not the time
// of processing, so an approval redelivered after midnight still counts on
// the day it happened.
func (c *Counter) Handle(ctx context.Context, m notify.Message) error {
	if m.Event.Type != notify.TypePaymentApproved {
		return nil
	}
	key := c.keys.ApprovalsDay(c.Day(m.Event.Time))
	_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, key, m.Event.ID)
		p.Expire(ctx, key, c.ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("count approval %s in %s: %w", m.Event.ID, key, err)
	}
	return nil
}

// Count returns the number of distinct approvals on the day of t.
func (c *Counter) Count(ctx context.Context, t time.Time) (int64, error) {
	key := c.keys.ApprovalsDay(c.Day(t))
	n, err := c.rdb.SCard(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("count approvals in %s: %w", key, err)
	}
	return n, nil
}
