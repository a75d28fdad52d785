package storetest

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/store"
)

func rejectionAt(offset int64) hub.Rejection {
	return hub.Rejection{
		Topic: "lerian.streaming.ledger_transaction.posted", Partition: 2, Offset: offset,
		CEID:    fmt.Sprintf("id-%d", offset),
		Headers: map[string]string{"ce-id": fmt.Sprintf("id-%d", offset), "ce-specversion": "0.3"},
		Reason:  "ce-specversion must be 1.0",
	}
}

func testRejections(t *testing.T, open Opener) {
	t.Run("StoredNewestFirstWithHeaders", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.tenant(t, "a", "")
		res := e.ingest(t, store.IngestParams{
			Events:   []hub.Event{NewEvent("a", "1")},
			Rejected: []hub.Rejection{rejectionAt(10), rejectionAt(11)},
		})
		wantOutcomes(t, res, accept(1))
		got, err := e.store.ListRejections(e.ctx, store.ListRejectionsParams{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("got %d rejections, want 2", len(got))
		}
		want := rejectionAt(11)
		want.ID, want.RejectedAt = got[0].ID, e.clock.Now()
		if !reflect.DeepEqual(got[0], want) {
			t.Fatalf("newest rejection\n got %+v\nwant %+v", got[0], want)
		}
		if got[1].Offset != 10 || got[1].ID >= got[0].ID {
			t.Fatalf("second rejection = %+v", got[1])
		}
		older, err := e.store.ListRejections(e.ctx, store.ListRejectionsParams{Before: got[0].ID, Limit: 10})
		if err != nil || len(older) != 1 || older[0].Offset != 10 {
			t.Fatalf("page before %d = %+v, %v", got[0].ID, older, err)
		}
	})

	t.Run("OneByIDWithItsSourceCoordinates", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		e.ingest(t, store.IngestParams{Rejected: []hub.Rejection{rejectionAt(10), rejectionAt(11)}})
		list, err := e.store.ListRejections(e.ctx, store.ListRejectionsParams{Limit: 10})
		if err != nil || len(list) != 2 {
			t.Fatalf("rejections = %+v, %v", list, err)
		}
		got, err := e.store.GetRejection(e.ctx, list[1].ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, list[1]) || got.Topic != "lerian.streaming.ledger_transaction.posted" || got.Partition != 2 || got.Offset != 10 {
			t.Fatalf("GetRejection(%d) = %+v, want %+v", list[1].ID, got, list[1])
		}
		if _, err := e.store.GetRejection(e.ctx, list[0].ID+100); hub.ErrorCode(err) != hub.ENOTFOUND {
			t.Fatalf("GetRejection of an id never stored: %v, want not_found", err)
		}
	})
	t.Run("BoundedToTheNewest", func(t *testing.T) {
		e := setup(t, open, store.Options{MaxRejections: 3})
		for batch := range 3 {
			e.ingest(t, store.IngestParams{Rejected: []hub.Rejection{
				rejectionAt(int64(batch*2 + 0)), rejectionAt(int64(batch*2 + 1)),
			}})
		}
		got, err := e.store.ListRejections(e.ctx, store.ListRejectionsParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var offsets []int64
		for _, r := range got {
			offsets = append(offsets, r.Offset)
		}
		if !reflect.DeepEqual(offsets, []int64{5, 4, 3}) {
			t.Fatalf("kept offsets %v, want the newest three [5 4 3]", offsets)
		}
	})

	t.Run("HostileBytesNeverBlockThePartition", func(t *testing.T) {
		// Whatever bytes a producer sent end up in a rejection: NUL,
		// invalid UTF-8, control characters, names of 200 KB. The store
		// keeps a cleaned, bounded row, and the next batch of the same
		// partition is accepted.
		e := setup(t, open, store.Options{})
		e.tenant(t, "a", "")
		huge := strings.Repeat("n", 200<<10)
		headers := map[string]string{"x-bad\x00nul": "a\x00b", "ce-\xff\xfe": "\xff", "ctl\x01\x1b[31m": "v\x07", huge: huge}
		for i := range 100 {
			headers[fmt.Sprintf("h%03d\x00", i)] = "\x00"
		}
		hostile := hub.Rejection{
			Topic: "t\x00\xff" + huge, Partition: 2, Offset: 41, CEID: "id\x00\xff" + huge,
			Headers: headers, Reason: "duplicate x-bad\x00nul\xff with different values " + huge,
		}
		e.ingest(t, store.IngestParams{Rejected: []hub.Rejection{hostile, {Partition: 2, Offset: 42, Reason: "\x00"}}})
		res := e.ingest(t, store.IngestParams{Events: []hub.Event{NewEvent("a", "after")}})
		wantOutcomes(t, res, accept(1))

		got, err := e.store.ListRejections(e.ctx, store.ListRejectionsParams{Limit: 10})
		if err != nil || len(got) != 2 {
			t.Fatalf("rejections: %d, %v", len(got), err)
		}
		r := got[1]
		safe := func(field, s string, max int) {
			t.Helper()
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) || len(s) > max {
				t.Errorf("%s: %d bytes, valid %v, NUL %v", field, len(s), utf8.ValidString(s), strings.ContainsRune(s, 0))
			}
		}
		safe("topic", r.Topic, store.MaxRejectionNameBytes)
		safe("ce_id", r.CEID, store.MaxRejectionNameBytes)
		safe("reason", r.Reason, store.MaxRejectionReasonBytes)
		if r.Offset != 41 || r.Partition != 2 || !strings.HasPrefix(r.Reason, "duplicate x-bad") || len(r.Headers) > store.MaxRejectionHeaders || len(r.Headers) == 0 {
			t.Errorf("stored %+v", r)
		}
		for k, v := range r.Headers {
			safe("header name", k, store.MaxRejectionNameBytes)
			safe("header value", v, store.MaxRejectionHeaderBytes)
		}
	})
}
