package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

type backfillView struct {
	Since         string  `json:"since"`
	State         string  `json:"state"`
	StartedAt     *string `json:"started_at"`
	FinishedAt    *string `json:"finished_at"`
	Matched       int64   `json:"matched"`
	Queued        int64   `json:"queued"`
	Skipped       int64   `json:"skipped"`
	Sequence      int64   `json:"sequence"`
	UntilSequence int64   `json:"until_sequence"`
}

type subWithBackfill struct {
	ID       string        `json:"id"`
	Backfill *backfillView `json:"backfill"`
}

func withBackfill(since string) string {
	return `{"name":"hooks","event_types":[{"type":"transaction.posted","schema_major":1}],
		"destination":{"url":"https://example.com/hook"},"backfill":{"since":"` + since + `"}}`
}

// The test clock stands at 2026-11-30T12:00:00Z; the inbox retention is
// the default 168h.
func TestSubscriptions_BackfillIsShownAndItsSinceChecked(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")

		var created subWithBackfill
		acme.json("POST", "/v1/subscriptions", withBackfill("2026-11-30T11:00:00Z"), 201, &created)
		b := created.Backfill
		if b == nil || b.Since != "2026-11-30T11:00:00Z" || b.State != "running" || b.StartedAt != nil || b.Queued != 0 {
			t.Fatalf("created backfill = %+v, want running since 11:00, not started (pending verification)", b)
		}
		var got subWithBackfill
		acme.json("GET", "/v1/subscriptions/"+created.ID, "", 200, &got)
		if got.Backfill == nil || got.Backfill.Since != b.Since || got.Backfill.State != "running" {
			t.Fatalf("GET backfill = %+v", got.Backfill)
		}
		plain, _ := acme.subscription("https://example.com/other")
		var page struct{ Data []subWithBackfill }
		acme.json("GET", "/v1/subscriptions", "", 200, &page)
		for _, s := range page.Data {
			if (s.ID == created.ID) != (s.Backfill != nil) {
				t.Fatalf("list: %s has backfill %+v", s.ID, s.Backfill)
			}
		}

		// Older than the retention: clamped to its horizon.
		acme.json("POST", "/v1/subscriptions", withBackfill("2020-01-01T00:00:00Z"), 201, &created)
		if created.Backfill.Since != "2026-11-23T12:00:00Z" {
			t.Fatalf("since 2020 became %s, want the horizon 2026-11-23T12:00:00Z", created.Backfill.Since)
		}

		// PATCH starts one on an existing subscription.
		acme.json("PATCH", "/v1/subscriptions/"+plain, `{"backfill":{"since":"2026-11-30T10:30:00+01:00"}}`, 200, &got)
		if got.Backfill == nil || got.Backfill.Since != "2026-11-30T09:30:00Z" || got.Backfill.State != "running" {
			t.Fatalf("PATCH backfill = %+v", got.Backfill)
		}

		for _, c := range []struct{ body, want string }{
			{withBackfill("2026-11-30T12:00:01Z"), "backfill.since: 2026-11-30T12:00:01Z is in the future"},
			{withBackfill("yesterday"), `backfill.since: "yesterday" is not an RFC 3339 time`},
			{strings.Replace(withBackfill("x"), `{"since":"x"}`, `{}`, 1), "backfill.since: required"},
			{strings.Replace(withBackfill("x"), `{"since":"x"}`, `{"since":"2026-11-30T11:00:00Z","until":"x"}`, 1), `backfill: unknown field "until"`},
			{strings.Replace(withBackfill("x"), `{"since":"x"}`, `null`, 1), "backfill: must be an object"},
		} {
			status, _, body := acme.do("POST", "/v1/subscriptions", c.body)
			var e struct {
				Error struct{ Code, Message string }
			}
			json.Unmarshal(body, &e)
			if status != 400 || !strings.Contains(e.Error.Message, c.want) {
				t.Errorf("got %d %s, want 400 naming %q", status, body, c.want)
			}
		}
		acme.json("GET", "/v1/subscriptions", "", 200, &page)
		if len(page.Data) != 3 {
			t.Fatalf("%d subscriptions, want 3: a rejected backfill stores nothing", len(page.Data))
		}
		status, _, body := acme.do("PATCH", "/v1/subscriptions/"+plain, `{"name":"renamed","backfill":{"since":"2027-01-01T00:00:00Z"}}`)
		wantError(t, status, body, 400, "invalid")
		acme.json("GET", "/v1/subscriptions/"+plain, "", 200, &got)
		if got.Backfill.Since != "2026-11-30T09:30:00Z" {
			t.Fatalf("a rejected PATCH changed the backfill: %+v", got.Backfill)
		}

		// Another tenant's subscription: 404, as always.
		globex := h.tenant("globex")
		status, _, body = globex.do("PATCH", "/v1/subscriptions/"+plain, `{"backfill":{"since":"2026-11-30T11:00:00Z"}}`)
		wantError(t, status, body, 404, "not_found")
	})
}
