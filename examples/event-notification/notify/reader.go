package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lerianstudio/streaming-hub/examples/event-notification/keyspace"
)

// Defaults for ReaderConfig.
const (
	DefaultBatch         = 16
	DefaultMaxDeliveries = 10
)

// ReaderConfig configures one member of one consumer group.
type ReaderConfig struct {
	Stream string
	Group  string
	// Consumer must be stable across restarts: a restarted member finds its
	// own pending entries again by name and reads them first.
	Consumer string
	// Batch is the COUNT of each read (default DefaultBatch).
	Batch int64
	// Block is how long the read for new entries waits when there are none.
	// Zero means do not block, which is what tests and the demo want.
	Block time.Duration
	// ClaimIdle is how long an entry must sit unacknowledged in another
	// member's pending list before this member takes it over with XAUTOCLAIM.
	// Zero disables taking over.
	ClaimIdle time.Duration
	// MaxDeliveries bounds how often one entry is delivered before it is
	// parked on the dead-letter stream (default DefaultMaxDeliveries).
	MaxDeliveries int64
	// DeadLetter is the dead-letter stream (default <Stream>.dlq).
	DeadLetter string
	Logger     *slog.Logger
}

func (c *ReaderConfig) validate() error {
	var errs []error
	if c.Stream == "" {
		errs = append(errs, errors.New("stream is required"))
	}
	if c.Group == "" {
		errs = append(errs, errors.New("group is required"))
	}
	if c.Consumer == "" {
		errs = append(errs, errors.New("consumer name is required"))
	}
	if c.Batch < 0 {
		errs = append(errs, fmt.Errorf("batch %d must be >= 0", c.Batch))
	}
	if c.Block < 0 {
		errs = append(errs, fmt.Errorf("block %s must be >= 0", c.Block))
	}
	if c.ClaimIdle < 0 {
		errs = append(errs, fmt.Errorf("claim idle %s must be >= 0", c.ClaimIdle))
	}
	if c.MaxDeliveries < 0 {
		errs = append(errs, fmt.Errorf("max deliveries %d must be >= 0", c.MaxDeliveries))
	}
	if c.DeadLetter != "" && c.DeadLetter == c.Stream {
		errs = append(errs, errors.New("dead-letter stream must differ from the stream"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("reader config: %w", err)
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.MaxDeliveries == 0 {
		c.MaxDeliveries = DefaultMaxDeliveries
	}
	if c.DeadLetter == "" {
		c.DeadLetter = keyspace.DeadLetterOf(c.Stream)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Reader is one consumer-group member. Pass is not safe for concurrent use:
// run one goroutine per Reader (scale out with more members, not goroutines).
type Reader struct {
	rdb     redis.UniversalClient
	cfg     ReaderConfig
	h       Handler
	log     *slog.Logger
	ensured atomic.Bool
}

// NewReader validates cfg and returns a Reader handing entries to h.
func NewReader(rdb redis.UniversalClient, cfg ReaderConfig, h Handler) (*Reader, error) {
	if rdb == nil {
		return nil, errors.New("reader: redis client is required")
	}
	if h == nil {
		return nil, errors.New("reader: handler is required")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger.With("stream", cfg.Stream, "group", cfg.Group, "consumer", cfg.Consumer)
	return &Reader{rdb: rdb, cfg: cfg, h: h, log: log}, nil
}

// Config returns the effective configuration (defaults applied).
func (r *Reader) Config() ReaderConfig { return r.cfg }

// PassResult counts what one pass did.
type PassResult struct {
	Claimed      int // taken over from other members with XAUTOCLAIM
	Pending      int // re-read from this member's own pending list
	New          int // read for the first time
	Acked        int // handled (or deliberately skipped) and XACKed
	Failed       int // handler failed: left pending for the next pass
	DeadLettered int // parked on the dead-letter stream and XACKed
}

func (p PassResult) String() string {
	return fmt.Sprintf("claimed=%d pending=%d new=%d acked=%d failed=%d dead-lettered=%d",
		p.Claimed, p.Pending, p.New, p.Acked, p.Failed, p.DeadLettered)
}

// Pass does one round:
//
//  1. take over entries idle longer than ClaimIdle in other members' pending
//     lists (XAUTOCLAIM ... JUSTID, which moves ownership without counting a
//     delivery, so step 2 counts exactly one);
//  2. read this member's own pending entries (XREADGROUP ... STREAMS s 0) and
//     handle them first: whatever failed last time is retried before anything
//     new is looked at;
//  3. read new entries (XREADGROUP ... STREAMS s >) and handle them.
//
// Handler failures are not errors of the pass: they are counted and the entry
// stays pending. The error is for Redis failures and cancellation.
func (r *Reader) Pass(ctx context.Context) (PassResult, error) {
	var res PassResult
	if err := r.ensureGroup(ctx); err != nil {
		return res, err
	}
	if r.cfg.ClaimIdle > 0 {
		n, err := r.claim(ctx)
		res.Claimed = n
		if err != nil {
			return res, err
		}
	}

	// Own pending list, paged by the last id seen so entries that fail again
	// are not re-read in a loop within the same pass.
	cursor := "0"
	for {
		msgs, err := r.read(ctx, cursor, -1)
		if err != nil {
			return res, err
		}
		res.Pending += len(msgs)
		for _, m := range msgs {
			if err := r.handle(ctx, m, &res); err != nil {
				return res, err
			}
		}
		if int64(len(msgs)) < r.cfg.Batch {
			break
		}
		cursor = msgs[len(msgs)-1].ID
	}

	block := time.Duration(-1) // go-redis: negative omits BLOCK; 0 would block forever
	if r.cfg.Block > 0 {
		block = r.cfg.Block
	}
	msgs, err := r.read(ctx, ">", block)
	if err != nil {
		return res, err
	}
	res.New = len(msgs)
	for _, m := range msgs {
		if err := r.handle(ctx, m, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// ensureGroup creates the group at the start of the stream (id 0), so a
// receiver added later still sees every notification the stream retains: the
// stream is the source of truth, not the moment a receiver was deployed.
func (r *Reader) ensureGroup(ctx context.Context) error {
	if r.ensured.Load() {
		return nil
	}
	err := r.rdb.XGroupCreateMkStream(ctx, r.cfg.Stream, r.cfg.Group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("create group %s on %s: %w", r.cfg.Group, r.cfg.Stream, err)
	}
	r.ensured.Store(true)
	return nil
}

func (r *Reader) claim(ctx context.Context) (int, error) {
	claimed := 0
	start := "0-0"
	for {
		ids, next, err := r.rdb.XAutoClaimJustID(ctx, &redis.XAutoClaimArgs{
			Stream:   r.cfg.Stream,
			Group:    r.cfg.Group,
			Consumer: r.cfg.Consumer,
			MinIdle:  r.cfg.ClaimIdle,
			Start:    start,
			Count:    r.cfg.Batch,
		}).Result()
		if err != nil {
			return claimed, fmt.Errorf("xautoclaim %s/%s: %w", r.cfg.Stream, r.cfg.Group, err)
		}
		claimed += len(ids)
		if len(ids) > 0 {
			r.log.Info("took over idle entries", "count", len(ids), "min_idle", r.cfg.ClaimIdle)
		}
		if next == "0-0" || next == "" {
			return claimed, nil
		}
		start = next
	}
}

func (r *Reader) read(ctx context.Context, id string, block time.Duration) ([]redis.XMessage, error) {
	streams, err := r.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group:    r.cfg.Group,
		Consumer: r.cfg.Consumer,
		Streams:  []string{r.cfg.Stream, id},
		Count:    r.cfg.Batch,
		Block:    block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("xreadgroup %s/%s from %s: %w", r.cfg.Stream, r.cfg.Group, id, err)
	}
	var out []redis.XMessage
	for _, s := range streams {
		out = append(out, s.Messages...)
	}
	return out, nil
}

// handle runs the handler on one entry and settles it: XACK on success, left
// pending on failure, parked once it has been delivered MaxDeliveries times.
func (r *Reader) handle(ctx context.Context, xm redis.XMessage, res *PassResult) error {
	log := r.log.With("entry", xm.ID)
	if xm.Values == nil {
		// The entry is still in the pending list but was trimmed or deleted
		// from the stream: there is nothing left to deliver.
		log.Warn("pending entry no longer in the stream; acknowledging")
		if err := r.ack(ctx, xm.ID); err != nil {
			return err
		}
		res.Acked++
		return nil
	}
	raw, _ := xm.Values[StreamField].(string)
	ev, data, err := Decode([]byte(raw))
	if err != nil {
		// Retrying cannot fix a malformed entry: park it straight away.
		deliveries, derr := r.deliveries(ctx, xm.ID)
		if derr != nil {
			return derr
		}
		if err := r.park(ctx, xm.ID, raw, "undecodable: "+err.Error(), deliveries); err != nil {
			return err
		}
		res.DeadLettered++
		return nil
	}

	herr := r.h.Handle(ctx, Message{ID: xm.ID, Event: ev, Data: data, Raw: raw})
	if herr == nil {
		if err := r.ack(ctx, xm.ID); err != nil {
			return err
		}
		res.Acked++
		return nil
	}
	if ctx.Err() != nil {
		// Shutting down: the failure says nothing about the entry.
		return fmt.Errorf("pass interrupted at %s: %w", xm.ID, ctx.Err())
	}

	deliveries, err := r.deliveries(ctx, xm.ID)
	if err != nil {
		return err
	}
	if deliveries >= r.cfg.MaxDeliveries {
		reason := fmt.Sprintf("failed %d deliveries: %v", deliveries, herr)
		if err := r.park(ctx, xm.ID, raw, reason, deliveries); err != nil {
			return err
		}
		res.DeadLettered++
		return nil
	}
	log.Warn("handler failed; entry stays pending", "type", ev.Type, "subject", ev.Subject,
		"deliveries", deliveries, "max_deliveries", r.cfg.MaxDeliveries, "err", herr)
	res.Failed++
	return nil
}

func (r *Reader) ack(ctx context.Context, id string) error {
	if err := r.rdb.XAck(ctx, r.cfg.Stream, r.cfg.Group, id).Err(); err != nil {
		return fmt.Errorf("xack %s %s: %w", r.cfg.Stream, id, err)
	}
	return nil
}

// deliveries reads the group's delivery counter for one entry. Redis raises
// it on every XREADGROUP that returns the entry (new or from history) and on
// XCLAIM/XAUTOCLAIM without JUSTID, so it survives restarts and takeovers,
// which an in-memory counter would not.
func (r *Reader) deliveries(ctx context.Context, id string) (int64, error) {
	pend, err := r.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: r.cfg.Stream, Group: r.cfg.Group, Start: id, End: id, Count: 1,
	}).Result()
	if err != nil {
		return 0, fmt.Errorf("xpending %s %s: %w", r.cfg.Stream, id, err)
	}
	if len(pend) == 0 {
		// Acknowledged meanwhile by another member: nothing left to bound.
		return 0, nil
	}
	return pend[0].RetryCount, nil
}

// park appends the entry to the dead-letter stream and acknowledges it in one
// MULTI/EXEC, so an entry is never both lost and acknowledged, nor parked
// twice by a crash between the two commands.
func (r *Reader) park(ctx context.Context, id, raw, reason string, deliveries int64) error {
	_, err := r.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{
			Stream: r.cfg.DeadLetter,
			Values: []any{
				StreamField, raw,
				"reason", reason,
				"entry", id,
				"stream", r.cfg.Stream,
				"group", r.cfg.Group,
				"consumer", r.cfg.Consumer,
				"deliveries", deliveries,
				"parked_at", time.Now().UTC().Format(time.RFC3339Nano),
			},
		})
		p.XAck(ctx, r.cfg.Stream, r.cfg.Group, id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("park %s on %s: %w", id, r.cfg.DeadLetter, err)
	}
	r.log.Error("entry parked on dead-letter stream", "entry", id, "dlq", r.cfg.DeadLetter, "reason", reason)
	return nil
}
