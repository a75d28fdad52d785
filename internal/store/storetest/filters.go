package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

// filtered stores a deliverable subscription of tenant to
// transaction.posted v1 with the given filters (JSON).
func (e env) filtered(t testing.TB, tenant, id, filters string) hub.Subscription {
	t.Helper()
	s := NewSubscription(tenant, id)
	s.VerificationState, s.MaxInFlight = hub.VerificationActive, hub.MaxMaxInFlight
	fs, err := hub.ParseFilters([]byte(filters))
	if err != nil {
		t.Fatalf("ParseFilters(%s): %v", filters, err)
	}
	s.Filters = fs
	out, err := e.store.CreateSubscription(e.ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// delivered claims every due job and lists, per subscription, the ce-ids
// of the events they deliver, sorted.
func (e env) delivered(t testing.TB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for {
		cs := e.claim(t, 1000)
		if len(cs) == 0 {
			break
		}
		for _, c := range cs {
			out[c.Job.SubscriptionID] = append(out[c.Job.SubscriptionID], c.Event.ID)
		}
		for _, c := range cs {
			e.complete(t, e.succeeded(c))
		}
	}
	for _, ids := range out {
		sort.Strings(ids)
	}
	return out
}

func filtersJSON(t testing.TB, fs []hub.Filter) string {
	t.Helper()
	b, err := json.Marshal(fs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func testFilters(t *testing.T, open Opener) {
	t.Run("StoredAndReadBackThenCleared", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		const f = `[{"exact":{"subject":"acc-1"}},{"any":[{"prefix":{"source":"//midaz/"}},{"not":{"suffix":{"resourcetype":"x"}}}]}]`
		s := e.filtered(t, "acme", "sub_1", f)
		if got := filtersJSON(t, s.Filters); got != f {
			t.Fatalf("created filters = %s, want %s", got, f)
		}
		got, err := e.store.GetSubscription(e.ctx, "acme", "sub_1")
		if err != nil {
			t.Fatal(err)
		}
		if j := filtersJSON(t, got.Filters); j != f {
			t.Fatalf("read filters = %s, want %s", j, f)
		}
		list, err := e.store.ListSubscriptions(e.ctx, store.ListSubscriptionsParams{TenantID: "acme", Limit: 10})
		if err != nil || len(list) != 1 || filtersJSON(t, list[0].Filters) != f {
			t.Fatalf("ListSubscriptions = %+v, %v", list, err)
		}
		got.Filters = nil
		upd, err := e.store.UpdateSubscription(e.ctx, got)
		if err != nil {
			t.Fatal(err)
		}
		if upd.Filters != nil {
			t.Fatalf("filters after clearing = %s, want none", filtersJSON(t, upd.Filters))
		}
		plain := e.subscribe(t, "acme", "sub_2", 1)
		if plain.Filters != nil {
			t.Fatalf("a subscription without filters reads back %s", filtersJSON(t, plain.Filters))
		}
	})

	t.Run("OnlyMatchingEventsGetJobs", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.tenant(t, "globex", "")
		// Five events of acme, with attributes the filters below pick
		// from, and one of globex that satisfies every filter.
		ev := func(tenant, id, subject, source string, ext map[string]string) hub.Event {
			x := NewEvent(tenant, id)
			x.Subject, x.Source, x.Extensions = subject, source, ext
			return x
		}
		events := []hub.Event{
			ev("acme", "e1", "acc-1.brl", "//midaz/ledger", map[string]string{"ce-resourcetype": "transaction", "ce-region": "br"}),
			ev("acme", "e2", "acc-2.usd", "//midaz/ledger", map[string]string{"ce-resourcetype": "transaction"}),
			ev("acme", "e3", "acc-1.usd", "//other/app", nil),
			ev("acme", "e4", "", "//midaz/fees", map[string]string{"ce-region": "us"}),
			ev("acme", "e5", "acc-3.brl", "//other/app", map[string]string{"ce-region": "br"}),
			ev("globex", "g1", "acc-1.brl", "//midaz/ledger", map[string]string{"ce-resourcetype": "transaction", "ce-region": "br"}),
		}
		events[4].DataSchema = "https://schemas.example.com/tx.json"
		cases := []struct {
			filters string
			want    []string // acme's events it delivers
		}{
			{`[{"exact":{"subject":"acc-1.brl"}}]`, []string{"e1"}},
			{`[{"prefix":{"source":"//midaz/"}}]`, []string{"e1", "e2", "e4"}},
			{`[{"suffix":{"subject":".brl"}}]`, []string{"e1", "e5"}},
			{`[{"exact":{"region":"br"}}]`, []string{"e1", "e5"}},                // an extension
			{`[{"exact":{"resourcetype":"transaction"}}]`, []string{"e1", "e2"}}, // a stored ce-resourcetype
			{`[{"not":{"exact":{"region":"br"}}}]`, []string{"e2", "e3", "e4"}},  // absent: not holds
			{`[{"prefix":{"subject":""}}]`, []string{"e1", "e2", "e3", "e5"}},    // e4 has no subject
			{`[{"prefix":{"dataschema":"https://"}}]`, []string{"e5"}},           // only e5 has one
			{`[{"exact":{"id":"e3"}}]`, []string{"e3"}},                          // id
			{`[{"exact":{"type":"studio.lerian.transaction.posted"}}]`, []string{"e1", "e2", "e3", "e4", "e5"}},
			{`[{"exact":{"tenantid":"globex"}}]`, nil},
			{`[{"all":[{"prefix":{"source":"//midaz/"}},{"suffix":{"subject":".usd"}}]}]`, []string{"e2"}},
			{`[{"any":[{"exact":{"region":"us"}},{"exact":{"subject":"acc-1.usd"}}]}]`, []string{"e3", "e4"}},
			{`[{"prefix":{"source":"//midaz/"}},{"exact":{"region":"br"}}]`, []string{"e1"}}, // the list: all hold
			{`[{"all":[{"any":[{"not":{"prefix":{"subject":"acc-1"}}}]}]}]`, []string{"e2", "e4", "e5"}},
			{`[{"exact":{"nosuchattr":"x"}}]`, nil},
		}
		for i, c := range cases {
			e.filtered(t, "acme", fmt.Sprintf("sub_%02d", i), c.filters)
		}
		e.subscribe(t, "acme", "sub_plain", hub.MaxMaxInFlight)
		e.filtered(t, "globex", "sub_globex", `[{"exact":{"region":"br"}}]`)

		res := e.ingest(t, store.IngestParams{Events: events})
		got := e.delivered(t)
		for i, c := range cases {
			id := fmt.Sprintf("sub_%02d", i)
			if !slices.Equal(got[id], c.want) {
				t.Errorf("%s %s delivers %v, want %v", id, c.filters, got[id], c.want)
			}
		}
		if want := []string{"e1", "e2", "e3", "e4", "e5"}; !slices.Equal(got["sub_plain"], want) {
			t.Errorf("the subscription without filters delivers %v, want %v", got["sub_plain"], want)
		}
		if !slices.Equal(got["sub_globex"], []string{"g1"}) {
			t.Errorf("globex's subscription delivers %v, want [g1]", got["sub_globex"])
		}
		total := 0
		for _, ids := range got {
			total += len(ids)
		}
		if res.Jobs != total {
			t.Errorf("Ingest reported %d jobs, %d were created", res.Jobs, total)
		}
	})

	t.Run("AChangeAppliesToTheNextRecord", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		s := e.filtered(t, "acme", "sub_1", `[{"exact":{"subject":"tx-a-00000"}}]`)
		e.publish(t, "acme", "a", 3)
		if got := e.delivered(t)["sub_1"]; !slices.Equal(got, []string{"a-00000"}) {
			t.Fatalf("delivers %v, want [a-00000]", got)
		}
		var err error
		s.Filters, _ = hub.ParseFilters([]byte(`[{"suffix":{"subject":"2"}}]`))
		if s, err = e.store.UpdateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		e.publish(t, "acme", "b", 3)
		if got := e.delivered(t)["sub_1"]; !slices.Equal(got, []string{"b-00002"}) {
			t.Fatalf("after the update delivers %v, want [b-00002]", got)
		}
		s.Filters = nil
		if _, err = e.store.UpdateSubscription(e.ctx, s); err != nil {
			t.Fatal(err)
		}
		e.publish(t, "acme", "c", 2)
		if got := e.delivered(t)["sub_1"]; !slices.Equal(got, []string{"c-00000", "c-00001"}) {
			t.Fatalf("after clearing delivers %v, want every event", got)
		}
	})

	t.Run("OperationalEventsMatchOnTheirAttributes", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "acme", "")
		e.subscribe(t, "acme", "sub_1", 10)
		for id, f := range map[string]string{
			"ops_mine":  `[{"exact":{"subject":"sub_1"}},{"exact":{"source":"//streaming-hub"}}]`,
			"ops_other": `[{"exact":{"subject":"sub_other"}}]`,
		} {
			s := NewSubscription("acme", id)
			s.VerificationState, s.MaxInFlight = hub.VerificationActive, 10
			s.EventTypes = []hub.EventTypeRef{{Type: hub.EventDeliveryDeadLettered, SchemaMajor: 1}}
			s.Filters, _ = hub.ParseFilters([]byte(f))
			if _, err := e.store.CreateSubscription(e.ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		e.publish(t, "acme", "a", 1)
		cs := e.claim(t, 10)
		if len(cs) != 1 {
			t.Fatalf("claimed %d, want 1", len(cs))
		}
		e.complete(t, e.deadLetter(cs[0]))
		got := e.delivered(t)
		if len(got["ops_mine"]) != 1 || len(got["ops_other"]) != 0 {
			t.Fatalf("operational jobs %v: want one for ops_mine, none for ops_other", got)
		}
	})
}
