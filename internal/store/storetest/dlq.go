package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lerianstudio/streaming-hub/internal/store"
)

func dlqRecord(topic string, offset int64, tenant string) store.DLQRecord {
	sp, so := int32(2), offset*10
	return store.DLQRecord{
		Topic: topic, Partition: 0, Offset: offset,
		SourceTopic: "lerian.streaming.ledger", SourcePartition: &sp, SourceOffset: &so,
		CEID: fmt.Sprintf("ce-%d", offset), TenantID: tenant,
		Headers:      map[string]string{"ce-id": fmt.Sprintf("ce-%d", offset), "x-lerian-dlq-source-topic": "lerian.streaming.ledger"},
		ValueExcerpt: `{"n":` + fmt.Sprint(offset) + `}`,
	}
}

// testDLQ: records of the producers' DLQ topics (docs/lerian-platform.md) are
// kept once per (topic, partition, offset), listed newest first with filters
// and pages, safe whatever bytes they carry, and reaped by age.
func testDLQ(t *testing.T, open Opener) {
	t.Run("SaveIsIdempotentAndListsNewestFirst", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		first := dlqRecord("lerian.streaming.ledger.dlq", 1, "acme")
		if err := e.store.SaveDLQRecords(e.ctx, []store.DLQRecord{first, dlqRecord("lerian.streaming.ledger.dlq", 2, "acme")}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		again := first
		again.ValueExcerpt = "redelivered"
		noCoords := store.DLQRecord{Topic: "lerian.streaming.crm.dlq", Offset: 7}
		if err := e.store.SaveDLQRecords(e.ctx, []store.DLQRecord{again, noCoords}); err != nil {
			t.Fatal(err)
		}
		got, err := e.store.ListDLQRecords(e.ctx, store.ListDLQParams{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("%d records, want 3 (a redelivery is kept once)", len(got))
		}
		if got[0].Topic != "lerian.streaming.crm.dlq" || got[0].SourcePartition != nil || got[0].SourceOffset != nil || got[0].SourceTopic != "" {
			t.Fatalf("newest = %+v, want the record without coordinates", got[0])
		}
		old := got[2]
		if old.Offset != 1 || old.ValueExcerpt != first.ValueExcerpt || old.CEID != "ce-1" || old.TenantID != "acme" ||
			old.SourceTopic != "lerian.streaming.ledger" || old.SourcePartition == nil || *old.SourcePartition != 2 ||
			old.SourceOffset == nil || *old.SourceOffset != 10 || old.Headers["x-lerian-dlq-source-topic"] != "lerian.streaming.ledger" ||
			!old.ReceivedAt.Equal(e.clock.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)) {
			t.Fatalf("first record = %+v", old)
		}
		if got[0].ReceivedAt.Sub(old.ReceivedAt) != time.Minute {
			t.Fatalf("received_at %v and %v", got[0].ReceivedAt, old.ReceivedAt)
		}
	})

	t.Run("FiltersAndPages", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		for i := range 6 {
			tenant := "acme"
			if i%2 == 1 {
				tenant = "globex"
			}
			topic := "lerian.streaming.ledger.dlq"
			if i >= 4 {
				topic = "lerian.streaming.crm.dlq"
			}
			if err := e.store.SaveDLQRecords(e.ctx, []store.DLQRecord{dlqRecord(topic, int64(i), tenant)}); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(time.Hour)
		}
		offsets := func(p store.ListDLQParams) string {
			t.Helper()
			got, err := e.store.ListDLQRecords(e.ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, r := range got {
				s = append(s, fmt.Sprint(r.Offset))
			}
			return strings.Join(s, ",")
		}
		if got := offsets(store.ListDLQParams{Limit: 10}); got != "5,4,3,2,1,0" {
			t.Fatalf("all = %s", got)
		}
		if got := offsets(store.ListDLQParams{Topic: "lerian.streaming.crm.dlq", Limit: 10}); got != "5,4" {
			t.Fatalf("topic = %s", got)
		}
		if got := offsets(store.ListDLQParams{TenantID: "globex", Limit: 10}); got != "5,3,1" {
			t.Fatalf("tenant = %s", got)
		}
		if got := offsets(store.ListDLQParams{Since: e.clock.Now().Add(-3 * time.Hour), Limit: 10}); got != "5,4,3" {
			t.Fatalf("since = %s", got)
		}
		page, err := e.store.ListDLQRecords(e.ctx, store.ListDLQParams{Limit: 2})
		if err != nil || len(page) != 2 {
			t.Fatalf("page: %d, %v", len(page), err)
		}
		if got := offsets(store.ListDLQParams{Before: page[1].ID, Limit: 2}); got != "3,2" {
			t.Fatalf("second page = %s", got)
		}
		if got := offsets(store.ListDLQParams{Before: page[1].ID, TenantID: "acme", Limit: 10}); got != "2,0" {
			t.Fatalf("second page of acme = %s", got)
		}
	})

	t.Run("HostileBytesAreKeptSafely", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		huge := strings.Repeat("n", 200<<10)
		headers := map[string]string{"x\x00nul": "v\x00", "\xff\xfe": "\xff", huge: huge}
		for i := range 100 {
			headers[fmt.Sprintf("h-%d", i)] = "v"
		}
		hostile := store.DLQRecord{
			Topic: "lerian.streaming.x.dlq", Offset: 1, SourceTopic: "src\x00\xff", CEID: "id\x00\xff" + huge,
			TenantID: "t\x00", Headers: headers, ValueExcerpt: "\x00\xff" + huge,
		}
		if err := e.store.SaveDLQRecords(e.ctx, []store.DLQRecord{hostile}); err != nil {
			t.Fatal(err)
		}
		got, err := e.store.ListDLQRecords(e.ctx, store.ListDLQParams{Limit: 10})
		if err != nil || len(got) != 1 {
			t.Fatalf("records: %d, %v", len(got), err)
		}
		r := got[0]
		safe := func(what, s string, max int) {
			t.Helper()
			if !utf8.ValidString(s) || strings.ContainsRune(s, 0) || len(s) > max {
				t.Fatalf("%s stored unsafely (%d bytes)", what, len(s))
			}
		}
		safe("source_topic", r.SourceTopic, store.MaxRejectionNameBytes)
		safe("ce_id", r.CEID, store.MaxRejectionNameBytes)
		safe("tenant_id", r.TenantID, store.MaxRejectionNameBytes)
		safe("value_excerpt", r.ValueExcerpt, store.MaxDLQValueBytes)
		if len(r.Headers) > store.MaxRejectionHeaders {
			t.Fatalf("%d headers kept", len(r.Headers))
		}
		for k, v := range r.Headers {
			safe("header name", k, store.MaxRejectionNameBytes)
			safe("header value", v, store.MaxRejectionHeaderBytes)
		}
	})

	t.Run("PruneByAge", func(t *testing.T) {
		e := setup(t, open, store.Options{})
		for i := range 3 {
			if err := e.store.SaveDLQRecords(e.ctx, []store.DLQRecord{dlqRecord("lerian.streaming.ledger.dlq", int64(i), "acme")}); err != nil {
				t.Fatal(err)
			}
		}
		e.clock.Advance(8 * 24 * time.Hour)
		if err := e.store.SaveDLQRecords(e.ctx, []store.DLQRecord{dlqRecord("lerian.streaming.ledger.dlq", 9, "acme")}); err != nil {
			t.Fatal(err)
		}
		before := e.clock.Now().Add(-7 * 24 * time.Hour)
		if n, err := e.store.PruneDLQRecords(e.ctx, before, 2); err != nil || n != 2 {
			t.Fatalf("first prune: %d, %v (want the batch of 2)", n, err)
		}
		if n, err := e.store.PruneDLQRecords(e.ctx, before, 2); err != nil || n != 1 {
			t.Fatalf("second prune: %d, %v", n, err)
		}
		got, err := e.store.ListDLQRecords(e.ctx, store.ListDLQParams{Limit: 10})
		if err != nil || len(got) != 1 || got[0].Offset != 9 {
			t.Fatalf("after prune: %+v, %v", got, err)
		}
	})
}
