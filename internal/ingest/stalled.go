package ingest

import (
	"fmt"
	"time"
)

// gaugeStall sets streaming_hub_ingest_partition_stalled{topic,partition}:
// 1 while the partition has failed to persist for longer than StallAfter
// (what /readyz reports), else 0. It runs after every persist attempt and
// on every readiness check, so it follows a stall within RetryMax and
// clears with the first batch that persists. A partition revoked or lost
// drops its series.
func (w *partition) gaugeStall(now time.Time) {
	v := 0.0
	if d, _ := w.stalled(now); d > w.c.cfg.StallAfter {
		v = 1
	}
	w.c.cfg.Metrics.PartitionStalled.WithLabelValues(w.topic, fmt.Sprint(w.partition)).Set(v)
}
