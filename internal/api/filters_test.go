package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func withFilters(filters string) string {
	return `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://example.com/hook"},"filters":` + filters + `}`
}

func filtersOf(t *testing.T, sub map[string]any) string {
	t.Helper()
	f, ok := sub["filters"]
	if !ok {
		t.Fatalf("no filters field in %v", sub)
	}
	b, _ := json.Marshal(f)
	return string(b)
}

func TestSubscriptions_InvalidFiltersAre400NamingThePath(t *testing.T) {
	testkit.Long(t)
	cases := []struct{ filters, want string }{
		{`[{"exact":{"subject":"a"}},{"any":[{"regex":{"subject":"a"}}]}]`, `filters[1].any[0]: unknown dialect "regex"`},
		{`{"exact":{"subject":"a"}}`, `filters: must be a list of filter expressions`},
		{`[{"exact":{"subject":"a","source":"b"}}]`, `filters[0].exact: must name exactly one attribute`},
		{`[{"prefix":{"Source":"//"}}]`, `filters[0].prefix: attribute "Source" must be a lower-case CloudEvents attribute name`},
		{`[{"suffix":{"subject":5}}]`, `filters[0].suffix.subject: must be a string`},
		{`[{"all":[]}]`, `filters[0].all: must be a non-empty list`},
		{`[{"not":{"not":{"not":{"not":{"exact":{"id":"x"}}}}}}]`, `filters[0].not.not.not.not: filters nest at most 4 levels deep`},
		{`[` + strings.Repeat(`{"exact":{"id":"x"}},`, 32) + `{"exact":{"id":"x"}}]`, `filters[32]: more than 32 filter expressions in all`},
	}
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme := h.tenant("acme")
		for _, c := range cases {
			status, _, body := acme.do("POST", "/v1/subscriptions", withFilters(c.filters))
			var e struct {
				Error struct{ Code, Message string }
			}
			json.Unmarshal(body, &e)
			if status != 400 || e.Error.Code != "invalid" || !strings.HasPrefix(e.Error.Message, c.want) {
				t.Errorf("filters %.60s\n got %d %s\nwant 400 beginning %q", c.filters, status, body, c.want)
			}
		}
		// PATCH validates too and changes nothing when it fails.
		var sub map[string]any
		acme.json("POST", "/v1/subscriptions", withFilters(`[{"exact":{"subject":"a"}}]`), 201, &sub)
		id := sub["id"].(string)
		status, _, body := acme.do("PATCH", "/v1/subscriptions/"+id, `{"filters":[{"any":[{"regex":{"subject":"a"}}]}]}`)
		wantError(t, status, body, 400, "invalid")
		if !strings.Contains(string(body), `filters[0].any[0]: unknown dialect \"regex\"`) {
			t.Errorf("PATCH error %s does not name the path", body)
		}
		acme.json("GET", "/v1/subscriptions/"+id, "", 200, &sub)
		if got := filtersOf(t, sub); got != `[{"exact":{"subject":"a"}}]` {
			t.Errorf("a rejected PATCH left filters %s", got)
		}
	})
}

func TestSubscriptions_FiltersAreShownAndPatchReplacesOrClearsThem(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHubAPI(t, d, apiOptions{})
		acme, globex := h.tenant("acme"), h.tenant("globex")
		const f = `[{"exact":{"subject":"acc-1"}},{"any":[{"prefix":{"source":"//midaz/"}},{"not":{"suffix":{"resourcetype":"x"}}}]}]`
		var sub map[string]any
		acme.json("POST", "/v1/subscriptions", withFilters(f), 201, &sub)
		id := sub["id"].(string)
		if got := filtersOf(t, sub); got != f {
			t.Fatalf("create answered filters %s, want %s", got, f)
		}
		acme.json("GET", "/v1/subscriptions/"+id, "", 200, &sub)
		if got := filtersOf(t, sub); got != f {
			t.Fatalf("GET shows filters %s, want %s", got, f)
		}
		var list struct{ Data []map[string]any }
		acme.json("GET", "/v1/subscriptions", "", 200, &list)
		if len(list.Data) != 1 || filtersOf(t, list.Data[0]) != f {
			t.Fatalf("the list shows %v", list.Data)
		}

		// Another tenant cannot see or change them.
		status, _, body := globex.do("PATCH", "/v1/subscriptions/"+id, `{"filters":null}`)
		wantError(t, status, body, 404, "not_found")

		// A PATCH of another field keeps them; a PATCH of filters replaces
		// the whole list; [] and null clear it.
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"name":"renamed"}`, 200, &sub)
		if got := filtersOf(t, sub); got != f {
			t.Fatalf("renaming changed filters to %s", got)
		}
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"filters":[{"suffix":{"subject":".brl"}}]}`, 200, &sub)
		if got := filtersOf(t, sub); got != `[{"suffix":{"subject":".brl"}}]` {
			t.Fatalf("PATCH filters = %s", got)
		}
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"filters":[]}`, 200, &sub)
		if got := filtersOf(t, sub); got != `[]` {
			t.Fatalf("PATCH [] left filters %s", got)
		}
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"filters":[{"exact":{"id":"x"}}]}`, 200, &sub)
		acme.json("PATCH", "/v1/subscriptions/"+id, `{"filters":null}`, 200, &sub)
		acme.json("GET", "/v1/subscriptions/"+id, "", 200, &sub)
		if got := filtersOf(t, sub); got != `[]` {
			t.Fatalf("PATCH null left filters %s", got)
		}

		// A subscription created without filters shows [].
		acme.json("POST", "/v1/subscriptions", `{"name":"n","event_types":[{"type":"a.b","schema_major":1}],"destination":{"url":"https://example.com"}}`, 201, &sub)
		if got := filtersOf(t, sub); got != `[]` {
			t.Fatalf("no filters shows %s, want []", got)
		}
	})
}
