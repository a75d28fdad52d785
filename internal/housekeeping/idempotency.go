package housekeeping

import (
	"context"
	"time"
)

// idempotencyReaper is the store's reap of expired idempotency keys
// (docs/lerian-platform.md); a store without it has none to reap.
type idempotencyReaper interface {
	ReapIdempotencyKeys(ctx context.Context, batch int) (int, error)
}

// reapIdempotencyKeys deletes the idempotency keys past their TTL, in
// batches, within the pass's budget.
func (h *Housekeeper) reapIdempotencyKeys(ctx context.Context) error {
	r, ok := h.cfg.Store.(idempotencyReaper)
	if !ok {
		return nil
	}
	start, total := time.Now(), 0
	for {
		n, err := r.ReapIdempotencyKeys(ctx, h.cfg.Batch)
		total += n
		if err != nil || n < h.cfg.Batch || time.Since(start) > h.cfg.Budget || ctx.Err() != nil {
			if total > 0 {
				h.cfg.Logger.Info("retention deleted rows", "idempotency_keys", total)
			}
			h.cfg.Metrics.RetentionDeleted.WithLabelValues("idempotency_keys").Add(float64(total))
			return err
		}
	}
}
