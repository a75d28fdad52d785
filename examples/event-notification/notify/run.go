package notify

import (
	"context"
	"errors"
	"time"
)

// Run calls Pass until ctx is done, for a long-running receiver. Tests and
// the demo call Pass directly instead, to drive each step.
//
// It pauses interval after a pass that found nothing to do, that had handler
// failures, or that failed on Redis. The pause after failures matters: the
// dead-letter bound counts deliveries, so during an outage of the source an
// entry is parked after about MaxDeliveries x interval, so size the two
// together (e.g. 10 x 30s tolerates five minutes down). With Block set, the
// read for new entries already waits up to Block when idle.
func (r *Reader) Run(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		return errors.New("run: interval must be > 0")
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		res, err := r.Pass(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			r.log.ErrorContext(ctx, "pass failed", "err", err)
			t.Reset(interval)
		case res.Failed > 0 || res.Claimed+res.Pending+res.New == 0:
			t.Reset(interval)
		default:
			t.Reset(0) // there may be more: go again at once
		}
	}
}
