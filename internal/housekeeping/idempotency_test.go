package housekeeping_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// A pass reaps the idempotency keys past their TTL, in batches, and keeps
// the live ones (docs/lerian-platform.md).
func TestPass_ReapsExpiredIdempotencyKeys(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		ctx := context.Background()
		clock := testkit.NewClock()
		s := d.Open(t, store.Options{Now: clock.Now})
		claim := func(key string) {
			t.Helper()
			_, ok, err := s.ClaimIdempotencyKey(ctx, store.IdempotencyClaim{Principal: "admin", Key: key, RequestHash: "h", Token: key, Lock: time.Minute})
			if err != nil || !ok {
				t.Fatalf("claim %s: %v %v", key, ok, err)
			}
			if done, err := s.CompleteIdempotencyKey(ctx, "admin", key, key, 201, []byte("sealed"), time.Hour); err != nil || !done {
				t.Fatalf("complete %s: %v %v", key, done, err)
			}
		}
		for i := range 5 {
			claim(fmt.Sprint("old-", i))
		}
		clock.Advance(30 * time.Minute)
		claim("young")
		clock.Advance(30 * time.Minute)

		cfg := newConfig(s)
		cfg.Batch = 2
		cfg.Now = clock.Now
		if _, _, err := newHousekeeper(t, cfg).Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if got := testutil.ToFloat64(cfg.Metrics.RetentionDeleted.WithLabelValues("idempotency_keys")); got != 5 {
			t.Fatalf("reaped %v keys, want the 5 expired", got)
		}
		rec, claimed, err := s.ClaimIdempotencyKey(ctx, store.IdempotencyClaim{Principal: "admin", Key: "young", RequestHash: "h", Token: "x", Lock: time.Minute})
		if err != nil || claimed || !rec.Completed {
			t.Fatalf("the live key: %+v %v %v", rec, claimed, err)
		}
	})
}
