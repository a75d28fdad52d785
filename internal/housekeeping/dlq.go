package housekeeping

import (
	"context"
	"time"
)

// pruneDLQ deletes the records of the producers' DLQ topics older than
// DLQRetention, in batches, within the pass's budget.
func (h *Housekeeper) pruneDLQ(ctx context.Context) error {
	before := h.cfg.Now().Add(-h.cfg.DLQRetention)
	start := time.Now()
	total := 0
	defer func() {
		h.cfg.Metrics.RetentionDeleted.WithLabelValues("dlq_records").Add(float64(total))
		if total > 0 {
			h.cfg.Logger.Info("retention deleted rows", "dlq_records", total)
		}
	}()
	for {
		n, err := h.cfg.Store.PruneDLQRecords(ctx, before, h.cfg.Batch)
		total += n
		if err != nil || n < h.cfg.Batch || time.Since(start) > h.cfg.Budget || ctx.Err() != nil {
			return err
		}
	}
}
