// Package writer is a process's one writer (docs/architecture.md, "The
// writer"): the records ingest took from every partition, the results its
// deliveries produced, the leases births and hand-offs take, and the
// statistics it gathered are committed together, one transaction per
// batch, and a batch closes when the previous commit returns.
package writer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/metrics"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// Store is the part of the store the writer uses.
type Store interface {
	Write(ctx context.Context, p store.WriteParams) (store.WriteResult, error)
	ResultsRecorded(ctx context.Context, cs []store.Completion) ([]string, error)
	Reclaim(ctx context.Context, token string) ([]store.Claimed, error)
}

// Delivery is the delivering side of the process (its dispatcher), told
// of what each batch leased and wrote. A process that only ingests has
// none.
type Delivery interface {
	// Offer reserves room for jobs born leased in the next batch with
	// records; nil when there is none.
	Offer() *store.BirthOffer
	// Born hands over the jobs a committed batch leased at birth (none
	// when it failed) and gives back the room not used. Called once per
	// offer, after HandOff's placed.
	Born(o *store.BirthOffer, jobs []store.Claimed)
	// HandOff is what to write with a batch of results: their auto-disable
	// gates and the hand-off claim of the subscriptions they free. placed
	// is called once after the batch, after Written (with the jobs the
	// hand-off claimed; written false when the batch failed).
	HandOff(results []store.Completion) (p store.CompleteParams, placed func(claimed []store.Claimed, written bool))
	// Written: these results are written (res.Fenced were not: their
	// lease was lost).
	Written(results []store.Completion, res store.CompleteResult)
	// GivenUp: these results will not be written (the database refused one
	// for good, or the process stops): they are no longer held here.
	GivenUp(results []store.Completion)
	// Stopping is closed once the delivery stops taking work. Looking for
	// what a failed batch leased (a hand-off, births) ends then: those
	// jobs, under the process's name, are taken over once its heartbeat
	// ends, and the stop, which waits for a hand-off in progress, is not
	// held for as long as the database stays away.
	Stopping() <-chan struct{}
}

// Config configures a Writer; config.Defaults fills the settings.
type Config struct {
	// FlushSize and FlushInterval bound how long results wait when no
	// records come to carry them: a batch of results alone is written at
	// FlushSize results or once the oldest waited FlushInterval.
	FlushSize     int
	FlushInterval time.Duration
	// StatsInterval is how often gathered statistics are written.
	StatsInterval time.Duration

	Store    Store
	Delivery Delivery // nil: the process only ingests
	Metrics  *metrics.Metrics
	Logger   *slog.Logger     // nil discards
	Now      func() time.Time // the statistics' clock; nil means time.Now
	// After is the timer of the waits between tries of a failing results
	// write; nil means time.After (tests drive it).
	After func(time.Duration) <-chan time.Time
}

func (c Config) check() error {
	ch := config.Check{Of: "writer.Config"}
	ch.Require("Store", c.Store != nil)
	ch.Require("Metrics", c.Metrics != nil)
	config.Positive(&ch, "FlushSize", c.FlushSize)
	config.Positive(&ch, "FlushInterval", c.FlushInterval)
	config.Positive(&ch, "StatsInterval", c.StatsInterval)
	return ch.Err()
}

// Writer batches and writes. Ingest and Result are safe for concurrent
// use; Run is the one goroutine that writes.
type Writer struct {
	cfg  Config
	wake chan struct{}

	mu      sync.Mutex
	records []*records // waiting for the next batch
	results []store.Completion
	oldest  time.Time // when the oldest waiting result came (process timer)
	// held: the waiting results failed their last write: none goes out
	// before heldUntil, and the next try first asks which the failed one
	// wrote after all (ResultsRecorded).
	heldUntil time.Time
	held      bool
	tries     int
	wait      time.Duration
	// writing counts results taken into a batch not yet done, for Drain.
	writing int
	drained chan struct{} // closed and replaced when nothing is waiting or writing
	stopped bool
	done    chan struct{} // closed when Run returns

	gathered store.Gathered // statistics not yet written
	failing  failing
}

// records are one partition's batch, waiting for its transaction.
type records struct {
	p    store.IngestParams
	done chan ingested // buffered: the writer never blocks on it
}

type ingested struct {
	res store.IngestResult
	err error
}

// maxRecords bounds the records of one batch: beyond it the rest wait for
// the next, so a batch's transaction stays short.
const maxRecords = 8192

// New returns a writer; Run starts it.
func New(cfg Config) (*Writer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	return &Writer{cfg: cfg, wake: make(chan struct{}, 1), drained: make(chan struct{}),
		done: make(chan struct{}), wait: firstWait}, nil
}

// SetDelivery names the dispatcher of the process; it must be called
// before Run.
func (w *Writer) SetDelivery(d Delivery) { w.cfg.Delivery = d }

func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Ingest writes one partition's batch in the next transaction and returns
// its outcome once that transaction committed (or failed). It is
// ingest.Persister. When ctx ends first it returns ctx's error: the batch
// may still be written, and is then found a duplicate when retried.
func (w *Writer) Ingest(ctx context.Context, p store.IngestParams) (store.IngestResult, error) {
	r := &records{p: p, done: make(chan ingested, 1)}
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return store.IngestResult{}, errors.New("writer: stopped")
	}
	w.records = append(w.records, r)
	w.mu.Unlock()
	w.signal()
	select {
	case x := <-r.done:
		return x.res, x.err
	case <-ctx.Done():
		return store.IngestResult{}, fmt.Errorf("writer: %w", ctx.Err())
	}
}

// Result queues one delivery result, written behind (docs/architecture.md,
// "The writer"): with the next records, or at FlushSize results, or once
// it waited FlushInterval.
func (w *Writer) Result(c store.Completion) {
	w.mu.Lock()
	if len(w.results) == 0 {
		w.oldest = time.Now()
	}
	w.results = append(w.results, c)
	// The first result of a batch wakes an idle writer to time its
	// FlushInterval; a full batch is written at once.
	wake := len(w.results) == 1 || len(w.results) >= w.cfg.FlushSize
	w.mu.Unlock()
	if wake {
		w.signal()
	}
}

// Drain waits until every result queued so far is written (or given up),
// or ctx ends: a stopping dispatcher's last results.
func (w *Writer) Drain(ctx context.Context) error {
	for {
		w.mu.Lock()
		idle := len(w.results) == 0 && w.writing == 0
		ch := w.drained
		w.mu.Unlock()
		if idle {
			return nil
		}
		w.signal()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("writer: results still unwritten: %w", ctx.Err())
		}
	}
}

// firstWait and maxWait bound the waits between tries of a results write
// the database refuses.
const (
	firstWait = 50 * time.Millisecond
	maxWait   = 5 * time.Second
)
