package app_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lerianstudio/streaming-hub/internal/app"
	"github.com/lerianstudio/streaming-hub/internal/destination"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// Records produced to Kafka reach a filtered subscription only when their
// headers satisfy its filters (set through the API), while a subscription
// without filters gets every one.
func TestEndToEnd_FiltersPickWhichProducedEventsAreDelivered(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		l := startLive(t, d, testkit.NewClock())
		filteredSink, plainSink := newRecorder(t), newRecorder(t)
		secret := destination.NewSecret()
		filtered := l.subscribe("acme", filteredSink.URL, secret, nil)
		l.subscribe("acme", plainSink.URL, secret, nil)
		var sub struct{ Filters []map[string]any }
		if status := l.api("PATCH", "/v1/subscriptions/"+filtered.ID, "acme",
			`{"filters":[{"prefix":{"subject":"acc-1/"}},{"not":{"exact":{"region":"us"}}}]}`, &sub); status != 200 || len(sub.Filters) != 2 {
			t.Fatalf("PATCH filters = %d %+v", status, sub)
		}
		rec := func(id, subject, region string) *kgo.Record {
			h := []kgo.RecordHeader{{Key: "ce-subject", Value: []byte(subject)}}
			if region != "" {
				h = append(h, kgo.RecordHeader{Key: "ce-region", Value: []byte(region)})
			}
			return testkit.CERecord(app.DevTopic, 0, "acme", id, h...)
		}
		l.produce(
			rec("e1", "acc-1/brl", "br"), // delivered
			rec("e2", "acc-2/brl", "br"), // another subject
			rec("e3", "acc-1/usd", "us"), // region us
			rec("e4", "acc-1/eur", ""),   // no region: not of an absent attribute holds
			rec("e5", "acc-1/brl", "br"), // delivered, last
		)
		testkit.WaitFor(t, "every event at the unfiltered destination", func() bool { return plainSink.count() >= 5 })
		testkit.WaitFor(t, "e5 at the filtered destination", func() bool {
			n := filteredSink.count()
			if n == 0 {
				return false
			}
			req, _ := filteredSink.request(n - 1)
			return req.Header.Get("X-Lerian-Event-Id") == "e5"
		})
		var got []string
		for i := range filteredSink.count() {
			req, _ := filteredSink.request(i)
			got = append(got, req.Header.Get("X-Lerian-Event-Id"))
		}
		if want := []string{"e1", "e4", "e5"}; !slices.Equal(got, want) {
			t.Fatalf("the filtered destination got %v, want %v", got, want)
		}
		if plainSink.count() != 5 {
			t.Fatalf("the unfiltered destination got %d, want 5", plainSink.count())
		}
	})
}
