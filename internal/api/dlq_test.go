package api_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// GET /v1/admin/dlq (docs/lerian-platform.md): the producers' DLQ records,
// admin only, newest first, every field, filtered by topic, tenant and since,
// in pages.
func TestDLQ_AdminOnlyNewestFirstFilteredAndPaged(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		start := h.clock.Now()
		for i := range 5 {
			sp, so := int32(1), int64(100+i)
			topic, tenant := "lerian.streaming.ledger.dlq", "acme"
			if i == 4 {
				topic, tenant = "lerian.streaming.crm.dlq", "globex"
			}
			rec := store.DLQRecord{Topic: topic, Offset: int64(i), SourceTopic: "lerian.streaming.ledger",
				SourcePartition: &sp, SourceOffset: &so, CEID: fmt.Sprint("id-", i), TenantID: tenant,
				Headers: map[string]string{"ce-id": fmt.Sprint("id-", i)}, ValueExcerpt: `{"i":` + fmt.Sprint(i) + `}`}
			if i == 0 {
				rec.SourcePartition, rec.SourceOffset = nil, nil
			}
			if err := h.store.SaveDLQRecords(t.Context(), []store.DLQRecord{rec}); err != nil {
				t.Fatal(err)
			}
			h.clock.Advance(time.Hour)
		}

		status, _, body := acme.do("GET", "/v1/admin/dlq", "")
		wantError(t, status, body, 403, "forbidden")
		status, _, body = client{t: t, base: h.url}.do("GET", "/v1/admin/dlq", "")
		wantError(t, status, body, 401, "unauthorized")
		for q, name := range map[string]string{
			"since=yesterday": "since", "limit=0": "limit", "limit=501": "limit", "cursor=***": "cursor",
			"topic=a%00b": "topic", "tenant_id=%FF": "tenant_id",
		} {
			status, _, body := h.admin.do("GET", "/v1/admin/dlq?"+q, "")
			wantError(t, status, body, 400, "invalid")
			if !containsName(body, name) {
				t.Fatalf("?%s: %s does not name %s", q, body, name)
			}
		}

		type item map[string]any
		type page struct {
			Data       []item
			NextCursor *string `json:"next_cursor"`
		}
		var all page
		h.admin.json("GET", "/v1/admin/dlq", "", 200, &all)
		if len(all.Data) != 5 || all.NextCursor != nil {
			t.Fatalf("%d records, cursor %v", len(all.Data), all.NextCursor)
		}
		for _, k := range []string{"id", "topic", "partition", "offset", "source_topic", "source_partition", "source_offset",
			"ce_id", "tenant_id", "headers", "value_excerpt", "received_at"} {
			if _, ok := all.Data[0][k]; !ok {
				t.Fatalf("item lacks %q: %v", k, all.Data[0])
			}
		}
		newest, oldest := all.Data[0], all.Data[4]
		if newest["topic"] != "lerian.streaming.crm.dlq" || newest["tenant_id"] != "globex" || newest["source_offset"] != float64(104) ||
			newest["source_partition"] != float64(1) || newest["value_excerpt"] != `{"i":4}` || newest["ce_id"] != "id-4" {
			t.Fatalf("newest = %v", newest)
		}
		if oldest["source_partition"] != nil || oldest["source_offset"] != nil || oldest["offset"] != float64(0) {
			t.Fatalf("oldest (no coordinates) = %v", oldest)
		}

		offsets := func(q string) string {
			t.Helper()
			var out []any
			cursor := ""
			for range 10 {
				var p page
				h.admin.json("GET", "/v1/admin/dlq?limit=2&"+q+cursor, "", 200, &p)
				for _, it := range p.Data {
					out = append(out, it["offset"])
				}
				if p.NextCursor == nil {
					return fmt.Sprint(out)
				}
				cursor = "&cursor=" + *p.NextCursor
			}
			t.Fatalf("?%s: too many pages", q)
			return ""
		}
		if got := offsets(""); got != "[4 3 2 1 0]" {
			t.Fatalf("pages = %s", got)
		}
		if got := offsets("topic=lerian.streaming.ledger.dlq"); got != "[3 2 1 0]" {
			t.Fatalf("?topic = %s", got)
		}
		if got := offsets("tenant_id=globex"); got != "[4]" {
			t.Fatalf("?tenant_id = %s", got)
		}
		since := url.QueryEscape(start.Add(3 * time.Hour).Format(time.RFC3339))
		if got := offsets("since=" + since); got != "[4 3]" {
			t.Fatalf("?since = %s", got)
		}
	})
}

func containsName(body []byte, name string) bool {
	var e struct{ Error struct{ Message string } }
	if err := json.Unmarshal(body, &e); err != nil {
		return false
	}
	return len(e.Error.Message) >= len(name) && e.Error.Message[:len(name)] == name
}
