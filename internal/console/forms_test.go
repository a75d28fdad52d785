package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// TestForms_InvalidUTF8Is400NamingTheField (docs/security.md): a form value or
// name that is not valid UTF-8 is refused with a 400 naming the field,
// whatever the form, before anything reaches the API; nothing is stored
// with U+FFFD. A key twice in the filters typed into the form reaches the
// API as typed, which refuses it.
func TestForms_InvalidUTF8Is400NamingTheField(t *testing.T) {
	testkit.Long(t)
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		key := h.tenant("acme")
		refused := func(got page, field string) {
			t.Helper()
			if want := field + ": not valid UTF-8"; got.status != http.StatusBadRequest || !strings.Contains(got.body, want) {
				t.Fatalf("got %d, want 400 with %q:\n%s", got.status, want, got.body)
			}
		}

		b := h.browser()
		refused(b.submit("/console/signin", "/console/signin", url.Values{"token": {"sh\xffk"}}), "token")

		admin := h.signIn(adminToken)
		refused(admin.submit("/console/tenants", "/console/tenants", url.Values{"id": {"initech"}, "name": {"Init\xc3ech"}}), "name")
		if st, _ := h.apiCall("GET", "/v1/tenants/initech", "", ""); st != 404 {
			t.Fatalf("a refused tenant was stored: %d", st)
		}
		got := admin.submit("/console/tenants", "/console/tenants", url.Values{"id": {"initech"}, "name\xfe": {"x"}})
		if got.status != http.StatusBadRequest || !strings.Contains(got.body, "a form field&#39;s name is not valid UTF-8") {
			t.Fatalf("a field name: %d\n%s", got.status, got.body)
		}

		tenant := h.signIn(key)
		form := func(extra url.Values) url.Values {
			v := url.Values{"name": {"hooks"}, "url": {"https://example.com/hook"}, "event_type": {"transaction.posted"}}
			for k, vs := range extra {
				v[k] = vs
			}
			return v
		}
		refused(tenant.submit("/console/subscriptions/new", "/console/subscriptions", form(url.Values{"name": {"ho\xffoks"}})), "name")
		refused(tenant.submit("/console/subscriptions/new", "/console/subscriptions", form(url.Values{"headers": {"X-A: v\xed\xa0\x80"}})), "headers")
		refused(tenant.submit("/console/subscriptions/new", "/console/subscriptions", form(url.Values{"auth_type": {"bearer"}, "auth_token": {"t\xff"}})), "auth_token")
		got = tenant.submit("/console/subscriptions/new", "/console/subscriptions", form(url.Values{"filters": {`[{"exact":{"subject":"a","subject":"b"}}]`}}))
		if got.status != http.StatusBadRequest || !strings.Contains(got.body, "filters[0].exact.subject: duplicate key") {
			t.Fatalf("a key twice in the filters: %d\n%s", got.status, got.body)
		}
		if st, body := h.apiCall("GET", "/v1/subscriptions", "", "acme"); st != 200 || strings.Contains(body, `"id"`) {
			t.Fatalf("refused subscriptions were stored: %d %s", st, body)
		}
		// A clean form still goes through.
		if got := tenant.submit("/console/subscriptions/new", "/console/subscriptions", form(url.Values{"filters": {`[{"exact":{"subject":"a"}}]`}})); got.status != http.StatusCreated {
			t.Fatalf("a clean form: %d\n%s", got.status, got.body)
		}
	})
}
