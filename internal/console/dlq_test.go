package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The producers' DLQ page (docs/lerian-platform.md): operator only, newest
// first, paged, filtered, and whatever a producer put in a record is shown as
// inert text.
func TestDLQPage_ListsRecordsInertlyForOperatorsOnly(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		key := h.tenant("acme")
		sp, so := int32(2), int64(42)
		recs := []store.DLQRecord{{
			Topic: "lerian.streaming.ledger.dlq", Offset: 7, SourceTopic: "lerian.streaming.ledger",
			SourcePartition: &sp, SourceOffset: &so, CEID: "ce-" + hostile, TenantID: "acme",
			Headers: map[string]string{"x-lerian-dlq-error-message": hostile}, ValueExcerpt: `{"note":"` + hostile + `"}`,
		}}
		for i := range 120 { // more than a page of 100
			recs = append(recs, store.DLQRecord{Topic: "lerian.streaming.crm.dlq", Offset: int64(100 + i), CEID: "bulk"})
		}
		if err := h.store.SaveDLQRecords(context.Background(), recs); err != nil {
			t.Fatal(err)
		}

		if got := h.signIn(key).get("/console/dlq"); got.status != 403 {
			t.Fatalf("tenant GET /console/dlq: %d, want 403", got.status)
		}
		admin := h.signIn(adminToken)
		got := admin.get("/console/dlq?topic=lerian.streaming.ledger.dlq")
		if got.status != 200 {
			t.Fatalf("admin GET /console/dlq: %d\n%s", got.status, got.body)
		}
		assertInert(t, "dlq", got.body)
		for _, want := range []string{"lerian.streaming.ledger.dlq", "lerian.streaming.ledger</code> [2] @42", "ce-&lt;script&gt;alert(1)&lt;/script&gt;",
			"&lt;img src=x onerror=alert(1)&gt;", `href="/console/dlq"`} {
			if !strings.Contains(got.body, want) {
				t.Fatalf("the DLQ page lacks %q:\n%s", want, got.body)
			}
		}
		if strings.Contains(got.body, "lerian.streaming.crm.dlq</code>") {
			t.Fatalf("?topic= did not filter")
		}

		all := admin.get("/console/dlq")
		if n := strings.Count(all.body, `<tr><td data-label="Received">`); n != 100 {
			t.Fatalf("first page has %d rows, want 100", n)
		}
		i := strings.Index(all.body, `href="/console/dlq?cursor=`)
		if i < 0 {
			t.Fatalf("no link to older records:\n%s", all.body)
		}
		link := all.body[i+len(`href="`):]
		link = strings.ReplaceAll(link[:strings.IndexByte(link, '"')], "&amp;", "&")
		older := admin.get(link)
		if n := strings.Count(older.body, `<tr><td data-label="Received">`); older.status != 200 || n != 21 || !strings.Contains(older.body, "lerian.streaming.ledger.dlq</code> [0] @7") {
			t.Fatalf("second page: %d, %d rows\n%s", older.status, n, older.body)
		}
	})
}
