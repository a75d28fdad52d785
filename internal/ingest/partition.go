package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

// partition is the worker of one assigned partition: it persists queued
// records batch by batch, in order, and commits each batch's offset only
// after the batch's transaction committed.
type partition struct {
	c         *Consumer
	topic     string
	partition int32

	ctx    context.Context // canceled on quit: aborts retries and waits
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}

	mu            sync.Mutex
	queue         []*kgo.Record
	highWatermark int64
	paused        bool
	persisted     *kgo.Record // last record whose transaction committed
	committed     *kgo.Record // last record whose offset commit succeeded
	// failingSince is when the first failed write of the batch being
	// persisted began (not when its error came back: readiness counts from
	// the write the database refused); zero while persisting works.
	// lastErr is its latest error.
	failingSince time.Time
	lastErr      error
}

// stalled reports how long this partition has failed to persist, and why.
func (w *partition) stalled(now time.Time) (time.Duration, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.failingSince.IsZero() {
		return 0, nil
	}
	return now.Sub(w.failingSince), w.lastErr
}

func (w *partition) setFailing(err error, began time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.failingSince, w.lastErr = time.Time{}, nil
		return
	}
	if w.failingSince.IsZero() {
		w.failingSince = began
	}
	w.lastErr = err
}

func newPartition(c *Consumer, topic string, p int32) *partition {
	ctx, cancel := context.WithCancel(context.Background())
	return &partition{
		c: c, topic: topic, partition: p,
		ctx: ctx, cancel: cancel,
		done: make(chan struct{}),
		wake: make(chan struct{}, 1),
	}
}

// push queues records. When the worker is behind (or retrying a failing
// store) it stops fetching this partition only, so the others go on. Pause
// and resume happen under w.mu so they cannot cross.
func (w *partition) push(recs []*kgo.Record, highWatermark int64) {
	w.mu.Lock()
	w.queue = append(w.queue, recs...)
	w.highWatermark = highWatermark
	if len(w.queue) >= w.c.cfg.MaxBacklog && !w.paused {
		w.paused = true
		w.c.cl.PauseFetchPartitions(map[string][]int32{w.topic: {w.partition}})
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *partition) quit() { w.cancel() }

// uncommitted returns the last persisted record when its offset was not
// committed yet.
func (w *partition) uncommitted() *kgo.Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.persisted != nil && w.persisted != w.committed {
		return w.persisted
	}
	return nil
}

func (w *partition) run() {
	defer close(w.done)
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-w.wake:
		}
		for {
			batch := w.peek()
			if len(batch) == 0 {
				break
			}
			if !w.persist(batch) {
				return // quit while retrying: nothing committed past the last success
			}
			w.advance(len(batch))
			if w.c.cfg.AfterPersist != nil {
				w.c.cfg.AfterPersist(w.topic, w.partition)
			}
			if w.ctx.Err() != nil {
				return // whoever stops us commits the persisted offset
			}
			w.commit()
		}
	}
}

// peek returns the next batch without removing it: it leaves the queue only
// once persisted.
func (w *partition) peek() []*kgo.Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queue[:min(len(w.queue), w.c.cfg.MaxBatch)]
}

// advance drops a persisted batch from the queue and resumes fetching when
// the backlog has drained.
func (w *partition) advance(n int) {
	w.mu.Lock()
	w.persisted = w.queue[n-1]
	w.queue = w.queue[n:]
	if len(w.queue) == 0 {
		w.queue = nil // let the old backing array go
	}
	if w.paused && len(w.queue) < w.c.cfg.MaxBacklog/2 {
		w.paused = false
		w.c.cl.ResumeFetchPartitions(map[string][]int32{w.topic: {w.partition}})
	}
	lag := w.highWatermark - w.persisted.Offset - 1
	w.mu.Unlock()
	w.c.cfg.Metrics.ConsumerLag.WithLabelValues(w.topic, fmt.Sprint(w.partition)).Set(float64(max(lag, 0)))
}

// persist writes the batch in one transaction, retrying with capped
// exponential back-off until it succeeds or the worker is told to quit. It
// never skips a batch: a partition that cannot be persisted stops, alone.
func (w *partition) persist(batch []*kgo.Record) bool {
	cfg := w.c.cfg
	params := split(batch, cfg.MaxRecordBytes, w.c.verifier, cfg.ServedTenant)
	span := w.c.traceBatch(w.topic, w.partition, len(batch), &params)
	// The refused records go to the quarantine topic first: the offset
	// that follows them is committed only once the broker holds them.
	if !w.quarantine(&params) {
		endBatch(span, params, store.IngestResult{}, 0, w.ctx.Err())
		return false
	}
	wait := cfg.RetryMin
	for attempt := 1; ; attempt++ {
		start, began := time.Now(), w.c.now()
		// The transaction is not canceled by quit: stopping lets the one
		// in flight finish (bounded), and only aborts the retries.
		ctx, cancel := context.WithTimeout(context.Background(), cfg.WriteTimeout)
		res, err := cfg.Store.Ingest(ctx, params.IngestParams)
		cancel()
		cfg.Metrics.InboxWriteDuration.Observe(time.Since(start).Seconds())
		if err == nil {
			w.setFailing(nil, began)
			w.gaugeStall(w.c.now())
			cfg.Metrics.InboxWrites.WithLabelValues("ok").Inc()
			endBatch(span, params, res, attempt, nil)
			w.c.count(params, res)
			if cfg.OnEvents != nil {
				if len(res.Tenants) > 0 {
					cfg.OnEvents(res.Tenants)
				}
			}
			return true
		}
		if w.ctx.Err() != nil {
			endBatch(span, params, res, attempt, err)
			return false
		}
		w.setFailing(err, began)
		w.gaugeStall(w.c.now())
		cfg.Metrics.InboxWrites.WithLabelValues("error").Inc()
		cfg.Logger.Error("inbox write failed; retrying this partition, others go on",
			"topic", w.topic, "partition", w.partition, "first_offset", batch[0].Offset,
			"records", len(batch), "attempt", attempt, "retry_in", wait, "err", err)
		// Jitter keeps partitions that failed together from retrying in
		// lockstep against a recovering database.
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-w.ctx.Done():
			t.Stop()
			endBatch(span, params, res, attempt, w.ctx.Err())
			return false
		case <-t.C:
		}
		wait = min(2*wait, cfg.RetryMax)
	}
}

// commit commits the offset after the last persisted record. A failed commit
// is not retried here: the next batch's commit covers it, and on restart the
// records are read again and discarded as duplicates.
func (w *partition) commit() {
	w.mu.Lock()
	r := w.persisted
	w.mu.Unlock()
	var commitErr error
	w.c.cl.CommitOffsetsSync(w.ctx, map[string]map[int32]kgo.EpochOffset{
		r.Topic: {r.Partition: {Epoch: r.LeaderEpoch, Offset: r.Offset + 1}},
	}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = firstCommitError(resp, err)
	})
	w.c.countCommit(commitErr)
	if commitErr != nil {
		if w.ctx.Err() == nil {
			w.c.cfg.Logger.Warn("offset commit failed", "topic", w.topic, "partition", w.partition, "offset", r.Offset+1, "err", commitErr)
		}
		return
	}
	w.mu.Lock()
	w.committed = r
	w.mu.Unlock()
}
