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
	page   pullPage
	status int
}

// closed says whether ch is closed, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Ingest wakes the long polls of exactly the tenants whose events it
// stored, through the hub's own waiters (the API's, which api's
// TestPull_LongPollIsAnsweredByTheWakeUpNotTheRecheck proves answer a poll
// without the periodic re-check), and a poll is answered with its tenant's
// event, not another tenant's. Nothing here is timed: on a loaded machine
// a wake-up is late, never wrong.
func TestPull_LongPollWakesWhenIngestStoresTheTenantsEvent(t *testing.T) {
	testkit.Long(t)
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
				r.status = l.api("GET", "/v1/events?wait=30s&after="+after, "acme", "", &r.page)
				ch <- r
			}()
			return ch
		}
		stored := func(tenant string) int {
			evs, err := l.Store.ListEvents(context.Background(), store.ListEventsParams{TenantID: tenant, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			return len(evs)
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
			acmeWoken := l.Waiters.Wait("acme")
			l.produce(ceRecord("globex", fmt.Sprintf("globex-%d", round), ""))
			testkit.WaitFor(t, fmt.Sprintf("globex-%d stored", round), func() bool { return stored("globex") == round+1 })
			select {
			case r := <-pending:
				t.Fatalf("round %d: another tenant's event answered acme's poll: %+v", round, r)
			default:
			}
			if closed(acmeWoken) {
				t.Fatalf("round %d: storing globex's event woke acme's polls", round)
			}

			l.produce(ceRecord("acme", fmt.Sprintf("acme-%d", round), ""))
			var r pullResult
			select {
			case r = <-pending:
			case <-time.After(testkit.Patience):
				t.Fatalf("round %d: the poll was never answered", round)
			}
			if r.status != 200 || len(r.page.Data) != 1 || r.page.Data[0].ID != fmt.Sprintf("acme-%d", round) || r.page.Data[0].TenantID != "acme" {
				t.Fatalf("round %d: %d %+v", round, r.status, r.page)
			}
			testkit.WaitFor(t, fmt.Sprintf("round %d: ingest to wake acme's polls", round), func() bool { return closed(acmeWoken) })
			cursor = r.page.NextCursor
		}
	})
}
