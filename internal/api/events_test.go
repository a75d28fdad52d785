package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	hub "github.com/lerianstudio/streaming-hub"
	"github.com/lerianstudio/streaming-hub/internal/config"
	"github.com/lerianstudio/streaming-hub/internal/store"
	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

type pulledEvent struct {
	ID, Type, Source, Subject, Time string
	Sequence                        int64
	CEType                          string          `json:"ce_type"`
	TenantID                        string          `json:"tenant_id"`
	SchemaVersion                   string          `json:"schema_version"`
	DataContentType                 string          `json:"data_content_type"`
	Data                            json.RawMessage `json:"data"`
	DataBase64                      *string         `json:"data_base64"`
}

type pulledPage struct {
	Data       []pulledEvent
	NextCursor string `json:"next_cursor"`
}

func ingestEvents(t *testing.T, s store.Store, evs ...hub.Event) {
	t.Helper()
	res, err := s.Ingest(context.Background(), store.IngestParams{Events: evs})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range res.Outcomes {
		if o.Verdict != hub.Accept {
			t.Fatalf("event %s: %s %s", evs[i].ID, o.Verdict, o.Reason)
		}
	}
}

func ids(evs []pulledEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// pullAll follows next_cursor from the start until an empty page.
func pullAll(c client, query string) (got []string, pages int, last string) {
	after := ""
	for pages = 0; pages < 100; pages++ {
		var p pulledPage
		c.json("GET", "/v1/events?"+query+"&after="+url.QueryEscape(after), "", 200, &p)
		if p.NextCursor == "" {
			c.t.Fatalf("page %d has no next_cursor", pages)
		}
		if len(p.Data) == 0 {
			if p.NextCursor != after && after != "" {
				c.t.Fatalf("an empty page moved the cursor from %q to %q", after, p.NextCursor)
			}
			return got, pages, p.NextCursor
		}
		got = append(got, ids(p.Data)...)
		after = p.NextCursor
	}
	c.t.Fatal("pull never reached an empty page")
	return nil, 0, ""
}

// Two tenants' events interleave in arrival order; each tenant pages
// through exactly its own, in order, once, and a cursor carries on where it
// stopped when more arrive.
func TestPull_OrderCursorsAndIsolationAcrossTwoTenants(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		var want = map[string][]string{}
		for i := range 7 {
			for _, tenant := range []string{"acme", "globex"} {
				id := fmt.Sprintf("%s-%d", tenant, i)
				ingestEvents(t, h.store, storetest.NewEvent(tenant, id))
				want[tenant] = append(want[tenant], id)
			}
		}

		got, pages, cursor := pullAll(acme, "limit=3")
		if !slices.Equal(got, want["acme"]) || pages != 3 {
			t.Fatalf("acme pulled %v in %d pages, want %v in 3", got, pages, want["acme"])
		}
		if got, _, _ := pullAll(globex, "limit=1000"); !slices.Equal(got, want["globex"]) {
			t.Fatalf("globex pulled %v, want %v", got, want["globex"])
		}
		// The admin reads a tenant's events by naming it.
		var p pulledPage
		status, _, body := h.admin.do("GET", "/v1/events?limit=2", "", "X-Tenant-Id", "globex")
		if err := json.Unmarshal(body, &p); status != 200 || err != nil || !slices.Equal(ids(p.Data), want["globex"][:2]) {
			t.Fatalf("admin as globex: %d %s", status, body)
		}

		// More arrive: the saved cursor yields only the new ones.
		ingestEvents(t, h.store, storetest.NewEvent("globex", "globex-late"), storetest.NewEvent("acme", "acme-late"))
		acme.json("GET", "/v1/events?after="+cursor, "", 200, &p)
		if !slices.Equal(ids(p.Data), []string{"acme-late"}) || p.Data[0].TenantID != "acme" {
			t.Fatalf("after the cursor: %+v", p.Data)
		}
		// Another tenant's cursor is only a position: it reveals nothing.
		globex.json("GET", "/v1/events?after="+cursor, "", 200, &p)
		if !slices.Equal(ids(p.Data), []string{"globex-late"}) {
			t.Fatalf("globex with acme's cursor: %v", ids(p.Data))
		}
	})
}

// Every field docs/api.md names is answered; JSON payloads come as JSON,
// others as base64; the types filter and the parameters' bounds hold.
func TestPull_FieldsPayloadsFiltersAndBadParameters(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		jsonEv := storetest.NewEvent("acme", "e-json")
		binEv := storetest.NewEvent("acme", "e-bin")
		binEv.DataContentType, binEv.Data = "application/octet-stream", []byte{0, 1, 0xfe, 0xff}
		badJSON := storetest.NewEvent("acme", "e-badjson")
		badJSON.Data = []byte("{not json")
		other := storetest.NewEvent("acme", "e-other")
		other.Type, other.EventType = "studio.lerian.balance.created", "balance.created"
		ingestEvents(t, h.store, jsonEv, binEv, badJSON, other)

		var p pulledPage
		acme.json("GET", "/v1/events", "", 200, &p)
		if len(p.Data) != 4 {
			t.Fatalf("pulled %d events, want 4", len(p.Data))
		}
		e := p.Data[0]
		if e.ID != "e-json" || e.Sequence <= 0 || e.Type != "transaction.posted" || e.CEType != "studio.lerian.transaction.posted" ||
			e.Source != "//midaz/ledger" || e.Subject != "tx-e-json" || e.Time != jsonEv.Time || e.TenantID != "acme" ||
			e.SchemaVersion != "1.2.3" || e.DataContentType != "application/json" || string(e.Data) != `{"id":"e-json"}` || e.DataBase64 != nil {
			t.Fatalf("json event = %+v", e)
		}
		if b := p.Data[1]; b.Data != nil || b.DataBase64 == nil || *b.DataBase64 != base64.StdEncoding.EncodeToString(binEv.Data) {
			t.Fatalf("binary event = %+v", b)
		}
		if b := p.Data[2]; b.Data != nil || b.DataBase64 == nil || *b.DataBase64 != base64.StdEncoding.EncodeToString(badJSON.Data) {
			t.Fatalf("unparseable JSON event = %+v, want it as base64", b)
		}
		if p.Data[0].Sequence >= p.Data[1].Sequence || p.Data[1].Sequence >= p.Data[2].Sequence {
			t.Fatalf("sequences out of order: %+v", p.Data)
		}

		for q, want := range map[string][]string{
			"types=balance.created":                     {"e-other"},
			"types=balance.created,transaction.posted":  {"e-json", "e-bin", "e-badjson", "e-other"},
			"types=balance.created&types=account.other": {"e-other"},
			"types=transaction.posted&limit=2":          {"e-json", "e-bin"},
		} {
			acme.json("GET", "/v1/events?"+q, "", 200, &p)
			if !slices.Equal(ids(p.Data), want) {
				t.Errorf("%s: %v, want %v", q, ids(p.Data), want)
			}
		}
		for _, q := range []string{"limit=0", "limit=1001", "limit=x", "wait=31s", "wait=-1s", "wait=soon", "after=!!", "after=" + base64.RawURLEncoding.EncodeToString([]byte("x")), "types=Transaction"} {
			if status, _, body := acme.do("GET", "/v1/events?"+q, ""); status != 400 {
				t.Errorf("%s: %d %s, want 400", q, status, body)
			}
		}
		status, _, body := h.admin.do("GET", "/v1/events", "")
		wantError(t, status, body, 400, "invalid") // the admin must name the tenant
	})
}

// The per-tenant token bucket: a burst, then 429 with Retry-After, a token
// back after 1/rate, and other tenants untouched.
func TestPull_RateLimitPerTenant(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{pull: &config.Pull{Rate: 0.5, Burst: 2}})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		acme.json("GET", "/v1/events", "", 200, nil)
		acme.json("GET", "/v1/events", "", 200, nil)
		status, hdr, body := acme.do("GET", "/v1/events", "")
		wantError(t, status, body, 429, "rate_limited")
		if hdr.Get("Retry-After") != "2" {
			t.Fatalf("Retry-After = %q, want 2 (one token at 0.5/s)", hdr.Get("Retry-After"))
		}
		globex.json("GET", "/v1/events", "", 200, nil)

		h.clock.Advance(time.Second)
		status, hdr, _ = acme.do("GET", "/v1/events", "")
		if status != 429 || hdr.Get("Retry-After") != "1" {
			t.Fatalf("half a token later: %d, Retry-After %q; want 429 and 1", status, hdr.Get("Retry-After"))
		}
		h.clock.Advance(time.Second)
		acme.json("GET", "/v1/events", "", 200, nil)
		status, _, _ = acme.do("GET", "/v1/events", "")
		if status != 429 {
			t.Fatalf("the bucket refilled more than one token: %d", status)
		}
	})
}

// pollAsync long-polls as c in the background (wait=30s); the answer comes
// on the channel, status 0 when the request failed.
func pollAsync(ctx context.Context, c client, after string) <-chan pollAnswer {
	out := make(chan pollAnswer, 1)
	go func() {
		var a pollAnswer
		defer func() { out <- a }()
		req, _ := http.NewRequestWithContext(ctx, "GET", c.base+"/v1/events?wait=30s&after="+after, nil)
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		a.status = resp.StatusCode
		json.NewDecoder(resp.Body).Decode(&a.page)
	}()
	return out
}

type pollAnswer struct {
	status int
	page   struct {
		Data       []json.RawMessage
		NextCursor string `json:"next_cursor"`
	}
}

// A shutting-down server answers its open long polls at once (200, no
// events, the cursor they came with), and later ones without waiting.
func TestPull_ReleasedLongPollsAnswerAtOnceWithTheirCursor(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		var first pollAnswer
		acme.json("GET", "/v1/events", "", 200, &first.page)
		open := pollAsync(context.Background(), acme, first.page.NextCursor)
		testkit.WaitFor(t, "the long poll to wait", func() bool { return h.waiters.Holding() == 1 })
		h.waiters.Release()
		// The safety nets are well under the poll's 30 s.
		for i, ch := range []<-chan pollAnswer{open, pollAsync(context.Background(), acme, first.page.NextCursor)} {
			select {
			case a := <-ch:
				if a.status != 200 || len(a.page.Data) != 0 || a.page.NextCursor != first.page.NextCursor {
					t.Fatalf("poll %d answered %d %+v, want 200, no events, cursor %s", i, a.status, a.page, first.page.NextCursor)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("poll %d was held after the release", i)
			}
		}
	})
}

// A client that gives up on its long poll is not an internal error: the
// request is logged as closed by the client (499), nothing at ERROR.
func TestPull_ClientThatGivesUpIsNotAnError(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		ctx, cancel := context.WithCancel(context.Background())
		gone := pollAsync(ctx, acme, "")
		testkit.WaitFor(t, "the long poll to wait", func() bool { return h.waiters.Holding() == 1 })
		cancel()
		<-gone
		testkit.WaitFor(t, "the request's log line", func() bool {
			return strings.Contains(h.logs.String(), `"path":"/v1/events","status":499`)
		})
		if logs := h.logs.String(); strings.Contains(logs, `"level":"ERROR"`) || strings.Contains(logs, "internal error") {
			t.Fatalf("an abandoned poll was logged as an error:\n%s", logs)
		}
	})
}

// TestPull_WithoutLimitAnswersAtMost50 (docs/api.md: lists default to 50):
// with 60 events stored, GET /v1/events answers 50 and the cursor goes on
// to the other 10.
func TestPull_WithoutLimitAnswersAtMost50(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		for i := range 60 {
			ingestEvents(t, h.store, storetest.NewEvent("acme", fmt.Sprintf("e-%02d", i)))
		}
		var p pulledPage
		acme.json("GET", "/v1/events", "", 200, &p)
		if len(p.Data) != 50 || p.Data[0].ID != "e-00" || p.Data[49].ID != "e-49" {
			t.Fatalf("without limit: %d events, want 50", len(p.Data))
		}
		acme.json("GET", "/v1/events?after="+p.NextCursor, "", 200, &p)
		if len(p.Data) != 10 || p.Data[0].ID != "e-50" {
			t.Fatalf("the next page: %d events, want 10", len(p.Data))
		}
		acme.json("GET", "/v1/events?limit=60", "", 200, &p)
		if len(p.Data) != 60 {
			t.Fatalf("limit=60: %d events", len(p.Data))
		}
	})
}
