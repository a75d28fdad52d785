package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

type pullPage struct {
	Data []struct {
		ID       string
		TenantID string `json:"tenant_id"`
	}
	NextCursor string `json:"next_cursor"`
}

type pullResult struct {
	page    pullPage
	status  int
	elapsed time.Duration
	done    time.Time
}

// A long poll is woken by ingest the moment its tenant's event is stored:
// within 100 ms of producing it, not at the next periodic re-check (1 s),
// and not by another tenant's event.
func TestPull_LongPollWakesWhenIngestStoresTheTenantsEvent(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		l := startLive(t, d, testkit.NewClock())
		for _, id := range []string{"acme", "globex"} {
			if _, err := l.Store.CreateTenant(context.Background(), store.CreateTenantParams{ID: id, Name: id}); err != nil {
				t.Fatal(err)
			}
		}
		poll := func(after string) <-chan pullResult {
			ch := make(chan pullResult, 1)
			go func() {
				var r pullResult
				start := time.Now()
				r.status = l.api("GET", "/v1/events?wait=10s&after="+after, "acme", "", &r.page)
				r.done = time.Now()
				r.elapsed = r.done.Sub(start)
				ch <- r
			}()
			return ch
		}

		// An empty wait answers after the wait, with the cursor unchanged.
		var first pullPage
		start := time.Now()
		if st := l.api("GET", "/v1/events?wait=300ms", "acme", "", &first); st != 200 || len(first.Data) != 0 || time.Since(start) < 300*time.Millisecond {
			t.Fatalf("empty wait: %d %+v after %v", st, first, time.Since(start))
		}

		cursor := first.NextCursor
		for round := range 3 {
			pending := poll(cursor)
			// Let the request reach its wait (the poll's duration below
			// proves it did wait).
			time.Sleep(300 * time.Millisecond)
			l.produce(ceRecord("globex", fmt.Sprintf("globex-%d", round), ""))
			time.Sleep(50 * time.Millisecond)
			select {
			case r := <-pending:
				t.Fatalf("round %d: another tenant's event answered acme's poll: %+v", round, r)
			default:
			}
			produced := time.Now()
			l.produce(ceRecord("acme", fmt.Sprintf("acme-%d", round), ""))
			r := <-pending
			if r.status != 200 || len(r.page.Data) != 1 || r.page.Data[0].ID != fmt.Sprintf("acme-%d", round) || r.page.Data[0].TenantID != "acme" {
				t.Fatalf("round %d: %d %+v", round, r.status, r.page)
			}
			if r.elapsed < 350*time.Millisecond {
				t.Fatalf("round %d: the poll answered after %v: it never waited", round, r.elapsed)
			}
			if lag := r.done.Sub(produced); lag > 100*time.Millisecond {
				t.Fatalf("round %d: the poll answered %v after the event was produced, want ≤ 100ms", round, lag)
			}
			t.Logf("round %d: answered %v after producing", round, r.done.Sub(produced))
			cursor = r.page.NextCursor
		}
	})
}
