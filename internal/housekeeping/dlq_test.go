package housekeeping_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The records of the producers' DLQ topics (docs/lerian-platform.md) are
// reaped after STREAMING_HUB_DLQ_RETENTION by the same pass, in batches.
func TestPass_ReapsDLQRecordsPastTheRetention(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ctx := context.Background()
		clock := testkit.NewClock()
		s := d.Open(t, store.Options{Now: clock.Now})
		save := func(offsets ...int64) {
			var recs []store.DLQRecord
			for _, o := range offsets {
				recs = append(recs, store.DLQRecord{Topic: "lerian.streaming.ledger.dlq", Offset: o})
			}
			if err := s.SaveDLQRecords(ctx, recs); err != nil {
				t.Fatal(err)
			}
		}
		save(0, 1, 2)
		clock.Advance(8 * 24 * time.Hour) // past the default 168h
		save(3)
		cfg := newConfig(s)
		cfg.Now, cfg.Batch = clock.Now, 2
		if _, _, err := newHousekeeper(t, cfg).Pass(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := s.ListDLQRecords(ctx, store.ListDLQParams{Limit: 10})
		if err != nil || len(got) != 1 || got[0].Offset != 3 {
			t.Fatalf("DLQ records left %+v, %v; want the recent one only", got, err)
		}
		if n := testutil.ToFloat64(cfg.Metrics.RetentionDeleted.WithLabelValues("dlq_records")); n != 3 {
			t.Fatalf("retention_deleted_total{kind=dlq_records} = %v, want 3", n)
		}
	})
}

// STREAMING_HUB_DLQ_PRUNE_INTERVAL (Lerian's chart: 1h): the pass prunes
// the producers' DLQ records only when that long has passed since it last
// did, however often it runs.
func TestPass_PrunesDLQRecordsEveryDLQPruneInterval(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ctx := context.Background()
		clock := testkit.NewClock()
		s := d.Open(t, store.Options{Now: clock.Now})
		cfg := newConfig(s)
		cfg.Now, cfg.DLQPruneInterval, cfg.DLQRetention = clock.Now, time.Hour, 10*time.Minute
		hk := newHousekeeper(t, cfg)
		left := func() int {
			t.Helper()
			if _, _, err := hk.Pass(ctx); err != nil {
				t.Fatal(err)
			}
			got, err := s.ListDLQRecords(ctx, store.ListDLQParams{Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			return len(got)
		}
		left() // prunes (nothing yet): the hour starts
		if err := s.SaveDLQRecords(ctx, []store.DLQRecord{{Topic: "lerian.streaming.ledger.dlq", Offset: 0}}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(20 * time.Minute) // past the retention, within the hour
		if n := left(); n != 1 {
			t.Fatalf("within the interval: %d records left, want 1 (not pruned yet)", n)
		}
		clock.Advance(41 * time.Minute)
		if n := left(); n != 0 {
			t.Fatalf("past the interval: %d records left, want 0", n)
		}
	})
}
