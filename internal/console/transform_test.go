package console_test

import (
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// The subscription form takes a transform
// (docs/filters-and-transforms.md) in a textarea; the
// subscription's page and its edit form show it; emptying it clears it; a
// program that does not compile is refused naming transform.
func TestActions_TransformThroughTheForms(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		key := h.tenant("acme")
		b := h.signIn(key)
		program := "{\r\n  kind: .type,\r\n  amount: .data.amount\r\n}"
		got := b.submit("/console/subscriptions/new", "/console/subscriptions", url.Values{"name": {"shaped"},
			"url": {"https://example.com/h"}, "event_type": {"transaction.posted@1"}, "transform": {program}})
		if got.status != 201 {
			t.Fatalf("create: %d\n%s", got.status, got.body)
		}
		id := regexp.MustCompile(`/console/subscriptions/([^"]+)"`).FindStringSubmatch(got.body)[1]
		st, body := h.apiCall("GET", "/v1/subscriptions/"+id, "", "acme")
		if st != 200 || !strings.Contains(body, `"transform":"{\n  kind: .type,\n  amount: .data.amount\n}"`) {
			t.Fatalf("the API shows: %d %s", st, body)
		}
		page := "/console/subscriptions/" + id
		want := html.EscapeString("{\n  kind: .type,\n  amount: .data.amount\n}")
		if view := b.get(page); !strings.Contains(view.body, "<dt>Transform</dt><dd><pre><code>"+want+"</code></pre>") {
			t.Fatalf("the subscription's page does not show the transform:\n%s", view.body)
		}
		edit := b.get(page + "/edit")
		if !strings.Contains(edit.body, `name="transform"`) || !strings.Contains(edit.body, ">"+want+"</textarea>") {
			t.Fatalf("the edit form does not show the transform:\n%s", edit.body)
		}
		got = b.submit("/console/subscriptions/new", "/console/subscriptions", url.Values{"name": {"bad"},
			"url": {"https://example.com/h"}, "event_type": {"transaction.posted@1"}, "transform": {"{a: }"}})
		if got.status != 400 || !strings.Contains(got.body, "transform: ") {
			t.Fatalf("a transform that does not compile: %d\n%s", got.status, got.body)
		}
		urlShown := regexp.MustCompile(`name="url" value="([^"]*)"`).FindStringSubmatch(edit.body)[1]
		got = b.submit(page+"/edit", page, url.Values{"name": {"shaped"}, "destination_type": {"webhook"}, "type_was": {"webhook"},
			"url": {urlShown}, "url_was": {urlShown}, "event_type": {"transaction.posted@1"}, "transform": {""}})
		if got.status != 303 {
			t.Fatalf("edit: %d\n%s", got.status, got.body)
		}
		if _, body := h.apiCall("GET", "/v1/subscriptions/"+id, "", "acme"); !strings.Contains(body, `"transform":null`) {
			t.Fatalf("emptying the field did not clear the transform: %s", body)
		}
		if view := b.get(page); !strings.Contains(view.body, "<dt>Transform</dt><dd>none") {
			t.Fatalf("the page of a subscription without a transform:\n%s", view.body)
		}
	})
}
