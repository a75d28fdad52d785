package store

import (
	"fmt"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
)

// BenchmarkMatch is the CPU side of matching one 500-record batch of 10
// tenants against their 10 subscriptions each, without filters and with 3
// filters per subscription that every event satisfies (the same jobs): what
// filters add to a batch once the rows are read, without the database's
// noise.
//
//	go test ./internal/store -run '^$' -bench Match -count 5
func BenchmarkMatch(b *testing.B) {
	filters, err := hub.ParseFilters([]byte(`[{"prefix":{"source":"//midaz/"}},{"not":{"exact":{"subject":"nobody"}}},` +
		`{"any":[{"suffix":{"type":".posted"}},{"exact":{"resourcetype":"transaction"}}]}]`))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	events := make([]hub.Event, 500)
	outcomes := make([]Outcome, len(events))
	for i := range events {
		events[i] = hub.Event{TenantID: fmt.Sprintf("tenant-%d", i%10), ID: fmt.Sprintf("evt-%d", i),
			Type: "studio.lerian.transaction.posted", EventType: "transaction.posted", SchemaMajor: 1,
			Source: "//midaz/ledger", Subject: fmt.Sprintf("tx-%d", i)}
		outcomes[i] = Outcome{Verdict: hub.Accept, Sequence: int64(i + 1)}
	}
	for _, n := range []int{0, 3} {
		b.Run(fmt.Sprintf("filters=%d", n), func(b *testing.B) {
			var subs []hub.Subscription
			for t := range 10 {
				for j := range 10 {
					s := hub.Subscription{ID: fmt.Sprintf("sub-%d-%d", t, j), TenantID: fmt.Sprintf("tenant-%d", t),
						EventTypes: []hub.EventTypeRef{{Type: "transaction.posted", SchemaMajor: 1}},
						Enabled:    true, VerificationState: hub.VerificationActive}
					if n > 0 {
						s.Filters = filters
					}
					subs = append(subs, s)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if jobs := Match(events, outcomes, subs, now); len(jobs) != 5000 {
					b.Fatalf("%d jobs, want 5000", len(jobs))
				}
			}
		})
	}
}

// Parsing happens once per distinct filters text, not per batch.
func TestFilters_ParsedOncePerText(t *testing.T) {
	col := []byte(`[{"exact":{"subject":"acc-1"}}]`)
	a, b := Filters(col), Filters([]byte(string(col)))
	if len(a) != 1 || &a[0] != &b[0] {
		t.Fatal("the same column text was parsed twice")
	}
	if bad := Filters([]byte(`[{"regex":{}}]`)); len(bad) != 1 || bad[0].Match(&hub.Event{Subject: "x"}) {
		t.Fatalf("an unparsable column gave %+v, want a filter no event satisfies", bad)
	}
	if Filters(nil) != nil {
		t.Fatal("NULL gave filters")
	}
}
