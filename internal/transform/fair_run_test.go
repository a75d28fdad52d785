package transform_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
	"github.com/lerianstudio/streaming-hub/internal/transform"
)

// One tenant loops a program that hits its limit, from 16 callers at once
// (previews and deliveries), as the report that found it did; another
// tenant's transforms, previews and deliveries alike, stay within 100 ms
// of their own p99 measured just before, in this test. What is compared is
// queueing, not speed: both phases run on the same machine, at its load.
func TestRun_AHostileTenantLeavesAnotherTenantsTransformsOnTime(t *testing.T) {
	testkit.Long(t)
	t.Cleanup(transform.ForgetTenants)
	const samples = 300
	honest, err := transform.Compile(`{currency: .data.currency, id: .id}`)
	if err != nil {
		t.Fatal(err)
	}
	hostile, err := transform.Compile(`"a" * 20000000 | test("(a|a)*b")`)
	if err != nil {
		t.Fatal(err)
	}
	in := event()
	in.TenantID = "honest"
	// measure runs the honest tenant's transforms one after another, 10
	// ms apart (so that the hostile tenant goes through many rounds of
	// killed and restarted workers meanwhile), half previews, and answers
	// their durations; it stops early after a minute (the old pool made
	// each wait seconds).
	// A run of the honest program that meets a limit anyway (a worker
	// that a loaded machine starved past its time, or that died) is
	// tried again, as the run helper does, and counts whole.
	retried := 0
	measure := func(phase string) []time.Duration {
		var out []time.Duration
		stop := time.Now().Add(time.Minute)
		for i := 0; i < samples && time.Now().Before(stop); i++ {
			start := time.Now()
			c := transform.Caller{Tenant: "honest", Preview: i%2 == 1}
			res, err := honest.RunAs(context.Background(), c, in)
			for try := 0; try < 2 && err != nil && strings.Contains(err.Error(), "transform_limit") && !errors.Is(err, transform.ErrBusy); try++ {
				t.Logf("%s: honest run %d: %v; tried again", phase, i, err)
				retried++
				res, err = honest.RunAs(context.Background(), c, in)
			}
			d := time.Since(start)
			if err != nil || !strings.Contains(string(res.Body), `"currency":"BRL"`) {
				t.Fatalf("%s: honest run %d: %s, %v after %s", phase, i, res.Body, err, d)
			}
			out = append(out, d)
			time.Sleep(10 * time.Millisecond)
		}
		return out
	}
	measure("warm-up")
	base := measure("baseline")

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var limits, busy, held atomic.Int64
	for i := range 16 {
		wg.Go(func() {
			bad := event()
			bad.TenantID = "hostile"
			for ctx.Err() == nil {
				_, err := hostile.RunAs(ctx, transform.Caller{Tenant: "hostile", Preview: i%2 == 0}, bad)
				switch {
				case errors.Is(err, transform.ErrBusy):
					busy.Add(1)
				case errors.Is(err, transform.ErrHeld):
					// A delivery held back: its job goes back to wait
					// for its retry, which this loop stands for.
					held.Add(1)
					time.Sleep(50 * time.Millisecond)
				case err != nil && strings.Contains(err.Error(), "transform_limit"):
					limits.Add(1)
				}
			}
		})
	}
	testkit.Eventually(t, 30*time.Second, "a hostile program to hit its limit", func() bool { return limits.Load() > 0 })
	under := measure("under attack")
	cancel()
	wg.Wait()

	pb, pu := p99(base), p99(under)
	t.Logf("honest p99 %s alone, %s beside the hostile tenant (%d samples; p50 %s, %s); the hostile tenant: %d limits, %d runs refused after waiting, %d deliveries held back",
		pb, pu, len(under), p50(base), p50(under), limits.Load(), busy.Load(), held.Load())
	if retried > 3 {
		t.Errorf("%d honest runs met a limit and were tried again", retried)
	}
	if len(under) < samples || pu-pb >= 100*time.Millisecond {
		t.Fatalf("beside a hostile tenant the honest tenant's p99 went from %s to %s (%d of %d runs in a minute)", pb, pu, len(under), samples)
	}
}

func p99(ds []time.Duration) time.Duration { return quantile(ds, 0.99) }
func p50(ds []time.Duration) time.Duration { return quantile(ds, 0.50) }

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
