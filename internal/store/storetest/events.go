package storetest

import (
	"fmt"
	"testing"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func testEvents(t *testing.T, open Opener) {
	e := setup(t, open, store.Options{})
	e.tenant(t, "a", "")
	var evs []hub.Event
	for i := range 6 {
		ev := NewEvent("a", fmt.Sprint(i+1))
		if i%2 == 1 {
			ev.Type, ev.EventType = "studio.lerian.account.created", "account.created"
		}
		evs = append(evs, ev)
	}
	e.ingest(t, store.IngestParams{Events: evs})

	list := func(p store.ListEventsParams) []int64 {
		t.Helper()
		p.TenantID = "a"
		got, err := e.store.ListEvents(e.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		var seqs []int64
		for _, ev := range got {
			seqs = append(seqs, ev.Sequence)
		}
		return seqs
	}
	if got := fmt.Sprint(list(store.ListEventsParams{After: 2, Limit: 3})); got != "[3 4 5]" {
		t.Errorf("after 2, limit 3 = %s", got)
	}
	if got := fmt.Sprint(list(store.ListEventsParams{Types: []string{"account.created"}})); got != "[2 4 6]" {
		t.Errorf("types account.created = %s", got)
	}
	if got := fmt.Sprint(list(store.ListEventsParams{Types: []string{"account.created", "transaction.posted"}, After: 4})); got != "[5 6]" {
		t.Errorf("two types after 4 = %s", got)
	}
	// Newest first (the console): Before pages backwards.
	if got := fmt.Sprint(list(store.ListEventsParams{Newest: true, Limit: 4})); got != "[6 5 4 3]" {
		t.Errorf("newest, limit 4 = %s", got)
	}
	if got := fmt.Sprint(list(store.ListEventsParams{Newest: true, Before: 3})); got != "[2 1]" {
		t.Errorf("newest before 3 = %s", got)
	}
	if got := fmt.Sprint(list(store.ListEventsParams{Newest: true, Types: []string{"account.created"}})); got != "[6 4 2]" {
		t.Errorf("newest account.created = %s", got)
	}
	other, err := e.store.ListEvents(e.ctx, store.ListEventsParams{TenantID: "b"})
	if err != nil || len(other) != 0 {
		t.Errorf("another tenant sees %+v, %v", other, err)
	}
}
