package dispatch

import (
	"context"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/store"
)

// completer batches results: one transaction per FlushSize results or per
// FlushInterval, whichever comes first.
func (d *Dispatcher) completer(results <-chan store.Completion) {
	var batch []store.Completion
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	flush := func() {
		if len(batch) == 0 {
			return
		}
		// Keep trying: an unwritten result is only lost if its lease
		// expires first, and then the job is simply delivered again.
		for wait := 50 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := d.complete(ctx, batch)
			cancel()
			if err == nil {
				break
			}
			d.cfg.Logger.Error("recording delivery results failed; retrying", "results", len(batch), "err", err)
			if wait >= 5*time.Second {
				d.cfg.Logger.Error("giving up on these results: their leases will expire and the jobs be delivered again", "results", len(batch))
				break
			}
			time.Sleep(wait)
		}
		batch = batch[:0]
	}
	for {
		select {
		case c, ok := <-results:
			if !ok {
				flush()
				return
			}
			if len(batch) == 0 {
				timer.Reset(d.cfg.FlushInterval)
			}
			batch = append(batch, c)
			if len(batch) >= d.cfg.FlushSize {
				timer.Stop()
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}

// complete writes one batch of results and accounts for them.
func (d *Dispatcher) complete(ctx context.Context, cs []store.Completion) error {
	res, err := d.cfg.Store.CompleteJobs(ctx, store.CompleteParams{Completions: cs, AutoDisable: d.cfg.AutoDisable})
	if err != nil {
		return err
	}
	fenced := make(map[string]bool, len(res.Fenced))
	for _, id := range res.Fenced {
		fenced[id] = true
	}
	m := d.cfg.Metrics
	for _, c := range cs {
		if fenced[c.JobID] {
			continue
		}
		switch c.Status {
		case hub.JobSucceeded:
			if m != nil {
				m.JobsCompleted.WithLabelValues(string(c.Status), "").Inc()
			}
		case hub.JobDeadLettered:
			if m != nil {
				m.JobsCompleted.WithLabelValues(string(c.Status), c.DeadLetterReason).Inc()
			}
			d.cfg.Logger.Warn("delivery dead-lettered", "job", c.JobID, "subscription", c.SubscriptionID,
				"reason", c.DeadLetterReason, "last_error", c.LastError)
		}
	}
	if len(res.Fenced) > 0 {
		if m != nil {
			m.CompletionsFenced.Add(float64(len(res.Fenced)))
		}
		d.cfg.Logger.Info("results not recorded: the lease had been lost to another worker", "jobs", res.Fenced)
	}
	for _, id := range res.Disabled {
		if m != nil {
			m.AutoDisables.Inc()
		}
		d.cfg.Logger.Warn("subscription auto-disabled: its destination kept failing for the whole window; "+
			"POST /v1/subscriptions/{id}/verify re-enables it", "subscription", id)
	}
	return nil
}

// observeSuccess and observeFailure record an attempt's metrics.
func (d *Dispatcher) observeSuccess(c store.Claimed, a *hub.Attempt) {
	if m := d.cfg.Metrics; m != nil {
		m.Attempts.WithLabelValues("success").Inc()
		m.AttemptDuration.WithLabelValues("success").Observe(a.Duration.Seconds())
		m.EndToEnd.Observe(d.now().Sub(c.Job.EnqueuedAt).Seconds())
	}
}

func (d *Dispatcher) observeFailure(c store.Claimed, a *hub.Attempt) {
	if m := d.cfg.Metrics; m != nil {
		m.Attempts.WithLabelValues("failure").Inc()
		m.AttemptDuration.WithLabelValues("failure").Observe(a.Duration.Seconds())
	}
	d.cfg.Logger.Debug("delivery attempt failed", "job", c.Job.ID, "subscription", c.Job.SubscriptionID,
		"attempt", c.Job.Attempts+1, "error", a.Error)
}
