package writer

import (
	"context"
	"fmt"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/crashpoint"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// batch is what one transaction carries.
type batch struct {
	records []*records
	results []store.Completion
	check   bool // results failed a try: ask first which it wrote
	stats   store.Stats
}

func (b *batch) empty() bool { return len(b.records) == 0 && len(b.results) == 0 && b.stats.Empty() }

// Run writes batches until ctx ends or Close is called. A batch is taken
// as soon as the previous commit returned: whatever waits then goes in it
// (group commit), so an idle writer commits at once and a busy one carries
// more. Records never wait for anything; results alone wait for FlushSize
// of them or FlushInterval; statistics are written every StatsInterval.
func (w *Writer) Run(ctx context.Context) error {
	defer close(w.done)
	stats := time.NewTicker(w.cfg.StatsInterval)
	defer stats.Stop()
	statsDue := false
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		b, wait, stop := w.take(statsDue)
		if !b.empty() {
			if !b.stats.Empty() {
				statsDue = false
			}
			w.write(ctx, b)
			continue
		}
		if stop {
			return nil
		}
		timer.Reset(wait)
		select {
		case <-w.wake:
		case <-timer.C:
		case <-stats.C:
			statsDue = true
		case <-ctx.Done():
			w.abandon()
			return nil
		}
	}
}

// take takes the next batch, or says how long to wait for one. With
// statsDue the gathered statistics go too.
func (w *Writer) take(statsDue bool) (b batch, wait time.Duration, stop bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	wait = time.Hour
	n := 0
	for len(w.records) > 0 && (n == 0 || n+len(w.records[0].p.Events)+len(w.records[0].p.Rejected) <= maxRecords) {
		r := w.records[0]
		n += len(r.p.Events) + len(r.p.Rejected)
		b.records = append(b.records, r)
		w.records = w.records[1:]
	}
	if len(w.records) == 0 {
		w.records = nil
	}
	if len(w.results) > 0 {
		// Results that failed are due again once their hold passed.
		due := w.stopped || w.held || len(b.records) > 0 || len(w.results) >= w.cfg.FlushSize || now.Sub(w.oldest) >= w.cfg.FlushInterval
		switch {
		case w.held && now.Before(w.heldUntil):
			wait = min(wait, w.heldUntil.Sub(now))
		case due:
			k := min(len(w.results), 4*w.cfg.FlushSize)
			b.results, b.check = w.results[:k:k], w.held
			w.results = w.results[k:]
			w.writing += k
			if len(w.results) == 0 {
				w.results = nil
			} else {
				w.oldest = now
			}
		default:
			wait = min(wait, w.cfg.FlushInterval-now.Sub(w.oldest))
		}
	}
	if (statsDue || w.stopped || w.gathered.Len() > maxGathered) && w.gathered.Len() > 0 {
		b.stats = w.gathered.Take()
	}
	if b.empty() && len(w.results) == 0 && w.writing == 0 {
		close(w.drained)
		w.drained = make(chan struct{})
	}
	return b, max(wait, time.Millisecond), w.stopped && b.empty() && len(w.results) == 0 && len(w.records) == 0
}

// maxGathered bounds the statistics held between writes: past it they are
// written at once.
const maxGathered = 50000

// write writes one batch and tells everyone its outcome.
func (w *Writer) write(ctx context.Context, b batch) {
	d := w.cfg.Delivery
	if b.check {
		b.results = w.unrecorded(b.results)
	}
	p := store.WriteParams{DeferStats: true, Stats: b.stats}
	var parts [][2]int // each records' span of p.Ingest.Events and .Rejected ends
	for _, r := range b.records {
		p.Ingest.Events = append(p.Ingest.Events, r.p.Events...)
		p.Ingest.Rejected = append(p.Ingest.Rejected, r.p.Rejected...)
		parts = append(parts, [2]int{len(p.Ingest.Events), len(p.Ingest.Rejected)})
	}
	if d != nil && len(p.Ingest.Events) > 0 {
		p.Offer = d.Offer()
	}
	placed := func([]store.Claimed, bool) {}
	if len(b.results) > 0 {
		if d != nil {
			p.Complete, placed = d.HandOff(b.results)
		}
		p.Complete.Completions = b.results
	}
	if len(b.results) > 0 {
		crashpoint.Reach(crashpoint.Unwritten) // answered, not yet written
		if len(b.records) > 0 {
			crashpoint.Reach(crashpoint.Merged) // records and results in one transaction
		}
	}
	start := time.Now()
	res, err := w.try(p)
	w.cfg.Metrics.WriterBatches.WithLabelValues(outcome(err)).Inc()
	w.cfg.Metrics.WriterBatchDuration.Observe(time.Since(start).Seconds())
	if err == nil {
		crashpoint.Reach(crashpoint.Written)
		w.gather(p, res)
		if len(b.results) > 0 {
			w.resultsWritten(b.results, res.Complete, placed)
		}
		if p.Offer != nil {
			d.Born(p.Offer, res.Born)
		}
		w.answer(b.records, parts, res.Ingest, nil)
		return
	}
	// Nothing was written, or it is not known what (the answer was lost
	// around the COMMIT): what the batch leased, born or handed off, is
	// first found by its tokens and handed over, so that no job stays
	// leased to this process unknown to it (an ordered subscription's
	// later jobs would pass it). Then each part goes on alone, so one the
	// database refuses holds up no other.
	if p.Complete.Next != nil {
		claimed, ok := w.reclaim(ctx, p.Complete.Next.Token, d.Stopping())
		placed(claimed, ok && len(claimed) > 0)
	} else {
		placed(nil, false)
	}
	if p.Offer != nil {
		born, _ := w.reclaim(ctx, p.Offer.Token, d.Stopping())
		d.Born(p.Offer, born)
	}
	if !b.stats.Empty() {
		w.regather(b.stats)
	}
	if len(b.results) > 0 {
		w.resultsFailed(b.results, err)
	}
	if len(b.records) > 0 && (len(b.results) > 0 || !b.stats.Empty() || len(b.records) > 1) {
		w.alone(ctx, b.records)
		return
	}
	w.answer(b.records, parts, store.IngestResult{}, err)
}

// try is one Write, not canceled by the stop (a commit cut off would leave
// its outcome unknown), bounded in time.
func (w *Writer) try(p store.WriteParams) (store.WriteResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	return w.cfg.Store.Write(ctx, p)
}

// writeTimeout bounds one batch's transaction.
const writeTimeout = 30 * time.Second

// alone writes each batch of records in a transaction of its own, after
// a merged batch failed: each gets its own outcome.
func (w *Writer) alone(ctx context.Context, rs []*records) {
	for _, r := range rs {
		p := store.WriteParams{Ingest: r.p, DeferStats: true}
		var offer *store.BirthOffer
		if d := w.cfg.Delivery; d != nil && len(r.p.Events) > 0 {
			offer = d.Offer()
			p.Offer = offer
		}
		res, err := w.try(p)
		if err == nil {
			w.gather(p, res)
		} else if offer != nil {
			res.Born, _ = w.reclaim(ctx, offer.Token, w.cfg.Delivery.Stopping())
		}
		if offer != nil {
			w.cfg.Delivery.Born(offer, res.Born)
		}
		r.done <- ingested{res.Ingest, err}
	}
}

// answer tells each batch of records its part of the outcome.
func (w *Writer) answer(rs []*records, parts [][2]int, res store.IngestResult, err error) {
	from := 0
	for i, r := range rs {
		if err != nil {
			r.done <- ingested{err: err}
			continue
		}
		to := parts[i][0]
		out := store.IngestResult{Outcomes: res.Outcomes[from:to:to], Jobs: res.Jobs, Subscriptions: res.Subscriptions}
		out.Tenants = store.AcceptedTenants(r.p.Events, out.Outcomes)
		from = to
		r.done <- ingested{res: out}
	}
}

// gather keeps a written batch's own statistics for the next write of
// them.
func (w *Writer) gather(p store.WriteParams, res store.WriteResult) {
	s := store.StatsOf(p, res, w.cfg.Now().UTC())
	if s.Empty() {
		return
	}
	w.mu.Lock()
	w.gathered.Add(s)
	w.mu.Unlock()
}

// regather puts back statistics whose write failed.
func (w *Writer) regather(s store.Stats) {
	w.mu.Lock()
	w.gathered.Add(s)
	w.mu.Unlock()
}

func outcome(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// Close stops taking records, writes what waits (results and
// statistics) and waits for Run to return, or for ctx.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.signal()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("writer: not everything was written: %w", ctx.Err())
	}
}

// abandon answers what waits when the writer is cut off (the shutdown's
// deadline): records fail, results are given up.
func (w *Writer) abandon() {
	w.mu.Lock()
	rs, cs := w.records, w.results
	w.records, w.results, w.stopped = nil, nil, true
	w.mu.Unlock()
	for _, r := range rs {
		r.done <- ingested{err: context.Canceled}
	}
	if len(cs) > 0 {
		w.cfg.Logger.Error("stopped before these results were written: the jobs will be taken over and sent again", "results", len(cs))
		if d := w.cfg.Delivery; d != nil {
			d.GivenUp(cs)
		}
	}
}

// reclaim finds the jobs a failed batch leased under token after all
// (store.Reclaim), trying until the database answers, ctx ends or stopping
// is closed (then ok is false: the jobs, if any, are taken over once the
// process's heartbeat ends).
func (w *Writer) reclaim(ctx context.Context, token string, stopping <-chan struct{}) (jobs []store.Claimed, ok bool) {
	if token == "" {
		return nil, true
	}
	wait := firstWait
	for {
		rctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		jobs, err := w.cfg.Store.Reclaim(rctx, token)
		cancel()
		if err == nil {
			if len(jobs) > 0 {
				w.cfg.Logger.Warn("a batch whose answer was lost had leased jobs after all: they are handed over", "jobs", len(jobs))
			}
			return jobs, true
		}
		w.cfg.Logger.Warn("finding what a failed batch leased failed; retrying", "err", err, "next_try_in", wait)
		select {
		case <-ctx.Done():
			return nil, false
		case <-stopping:
			w.cfg.Logger.Warn("stopping before finding what a failed batch leased: those jobs, if any, are taken over "+
				"once this process's heartbeat ends", "err", err)
			return nil, false
		case <-time.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
}
