package console_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/store/storetest"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// docs/console.md: tables show the subscription's name with its id a small line
// under it, times relative with the exact time on hover, and the search's
// time filters are datetime-local inputs read as UTC.
func TestTables_NamesBeforeIDsAndRelativeTimes(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		key := h.tenant("acme")
		rc := receiver(t, "ok")
		sub := h.subscription("acme", "ledger-hooks", rc.URL+"/hook")
		h.ingest(storetest.NewEvent("acme", "evt-1"))
		job := h.jobOf("acme", "evt-1")
		created := h.clock.Now().UTC()
		h.clock.Advance(3*time.Minute + 10*time.Second)
		b := h.signIn(key)

		list := b.get("/console/deliveries")
		ref := `>ledger-hooks</a><code class="id" title="` + sub + `">` + sub + `</code>`
		if list.status != 200 || !strings.Contains(list.body, ref) {
			t.Fatalf("the deliveries table does not name the subscription (%s):\n%s", ref, list.body)
		}
		exact := created.Format(time.RFC3339)
		if m := regexp.MustCompile(`<time datetime="[^"]+" title="([^"]+)">3 min ago</time>`).FindStringSubmatch(list.body); m == nil || !strings.HasPrefix(m[1], strings.TrimSuffix(exact, "Z")) {
			t.Fatalf("no relative time with the exact time (%s) as its title:\n%s", exact, list.body)
		}
		// The event by its type, its ce-id the secondary line, in the
		// search and in the subscription's recent deliveries.
		// The type breaks only after its dots (docs/console.md).
		evRef := `<a href="/console/events/evt-1"><code class="etype">transaction.<wbr>posted</code></a><code class="id" title="evt-1">evt-1</code>`
		if !strings.Contains(list.body, evRef) {
			t.Fatalf("the deliveries table does not name the event's type (%s):\n%s", evRef, list.body)
		}
		if p := b.get("/console/subscriptions/" + sub); !strings.Contains(p.body, evRef) {
			t.Fatalf("the subscription's recent deliveries do not name the event's type (%s):\n%s", evRef, p.body)
		}
		if !strings.Contains(list.body, `<code class="id" title="`+job+`">`) {
			t.Fatalf("the delivery id is not its row's secondary line:\n%s", list.body)
		}
		if !strings.Contains(list.body, `<option value="`+sub+`">ledger-hooks</option>`) {
			t.Fatalf("the subscription filter does not offer it by name:\n%s", list.body)
		}
		for _, in := range []string{`name="since" type="datetime-local"`, `name="until" type="datetime-local"`} {
			if !strings.Contains(list.body, in) {
				t.Fatalf("the search lacks %s:\n%s", in, list.body)
			}
		}
		if strings.Contains(list.body, "2006-01-02") || strings.Contains(list.body, "placeholder=\"2026") {
			t.Fatalf("a reference time is shown as a placeholder:\n%s", list.body)
		}
		// A datetime-local value (UTC) filters and is shown again as typed.
		since := created.Add(time.Minute).Format("2006-01-02T15:04:05")
		got := b.get("/console/deliveries?since=" + url.QueryEscape(since))
		if strings.Contains(got.body, job) || !strings.Contains(got.body, `value="`+since+`"`) {
			t.Fatalf("since %s: the delivery is listed or the input lost its value:\n%s", since, got.body)
		}

		one := b.get("/console/deliveries/" + job)
		if !strings.Contains(one.body, "<h1>Delivery to ledger-hooks of <code>transaction.posted</code></h1>") {
			t.Fatalf("the delivery's heading does not name its subscription and event type:\n%s", one.body)
		}
		ev := b.get("/console/events/evt-1")
		if !strings.Contains(ev.body, "<h1>Event <code>transaction.posted</code></h1>") || !strings.Contains(ev.body, ref) {
			t.Fatalf("the event page does not name its type and its deliveries' subscription:\n%s", ev.body)
		}
	})
}

// An operator who has not chosen a tenant, or chose another, follows a
// link to a delivery, subscription or event and gets the page, acting on
// the tenant that holds it from then on.
func TestDeepLinks_OperatorActsOnTheResourcesTenant(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		h.tenant("acme")
		h.tenant("globex")
		rc := receiver(t, "ok")
		acmeSub := h.subscription("acme", "acme-hooks", rc.URL+"/hook")
		globexSub := h.subscription("globex", "globex-hooks", rc.URL+"/hook")
		h.ingest(storetest.NewEvent("acme", "evt-1"))
		h.ingest(storetest.NewEvent("globex", "evt-1"))
		h.ingest(storetest.NewEvent("globex", "evt-g"))
		job := h.jobOf("acme", "evt-1")
		admin := h.signIn(adminToken)

		if p := admin.get("/console/deliveries"); !strings.Contains(p.body, "Choose the tenant") && !strings.Contains(p.body, "Choose the tenant to act on") {
			t.Fatalf("with no tenant chosen, a list asks for one:\n%s", p.body)
		}
		p := admin.get("/console/deliveries/" + job)
		if p.status != 200 || !strings.Contains(p.body, "Attempt log") || !strings.Contains(p.body, "Acting on tenant acme, which holds this delivery.") {
			t.Fatalf("the delivery link: %d\n%s", p.status, p.body)
		}
		// The choice stands: the lists and the page's buttons act on acme.
		if p := admin.get("/console/subscriptions"); !strings.Contains(p.body, "acme-hooks") {
			t.Fatalf("after the link, the subscriptions are not acme's:\n%s", p.body)
		}
		p = admin.get("/console/subscriptions/" + globexSub)
		if p.status != 200 || !strings.Contains(p.body, "<h1>globex-hooks</h1>") || !strings.Contains(p.body, "Acting on tenant globex, which holds this subscription.") {
			t.Fatalf("a link to another tenant's subscription: %d\n%s", p.status, p.body)
		}
		if p := admin.get("/console/events/evt-g"); p.status != 200 || strings.Contains(p.body, "which holds this") {
			t.Fatalf("an event of the tenant acted on: %d\n%s", p.status, p.body)
		}
		// A ce-id two tenants hold is the chosen tenant's while it is one of
		// them.
		if p := admin.get("/console/events/evt-1"); p.status != 200 || !strings.Contains(p.body, "globex-hooks") {
			t.Fatalf("evt-1 while acting on globex: %d\n%s", p.status, p.body)
		}
		if p := admin.get("/console/subscriptions/" + acmeSub + "/edit"); p.status != 200 || !strings.Contains(p.body, `value="acme-hooks"`) {
			t.Fatalf("the edit link of acme's subscription: %d\n%s", p.status, p.body)
		}
		if p := admin.get("/console/deliveries/dlv_nothing"); p.status != 404 {
			t.Fatalf("a link to nothing: %d", p.status)
		}
		// Without a tenant chosen, a ce-id two tenants hold names both.
		fresh := h.signIn(adminToken)
		if p := fresh.get("/console/events/evt-1"); p.status != 200 || !strings.Contains(p.body, "<code>acme</code>, <code>globex</code>") {
			t.Fatalf("evt-1 with no tenant chosen: %d\n%s", p.status, p.body)
		}
		if p := fresh.get("/console/subscriptions/sub_nothing"); p.status != 404 || !strings.Contains(p.body, "No tenant has a subscription with this id.") {
			t.Fatalf("a link to no subscription: %d\n%s", p.status, p.body)
		}
	})
}

// The form wraps each destination kind's and each auth type's fields in
// their own section (the stylesheet shows the chosen one's only), and the
// hub reads only the chosen kind's fields.
func TestForm_OnlyTheChosenDestinationsFields(t *testing.T) {
	testkit.EachDriver(t, func(t *testing.T, d testkit.Driver) {
		h := newHub(t, d, options{})
		key := h.tenant("acme")
		b := h.signIn(key)
		form := b.get("/console/subscriptions/new")
		for _, want := range []string{
			`<div class="dest dest-kafka">
    <label for="brokers">`,
			`<div class="dest dest-webhook dest-rabbitmq dest-nats">
    <label for="url">`,
			`<div class="dest dest-webhook">
    <label for="headers">`,
			`<div class="auth auth-bearer">`,
			`<option value="webhook" selected>`,
		} {
			if !strings.Contains(form.body, want) {
				t.Fatalf("the form lacks %q:\n%s", want, form.body)
			}
		}
		// A Kafka subscription submitted with a webhook's fields still filled
		// in (hidden, yet sent by the browser) keeps none of them.
		got := b.submit("/console/subscriptions/new", "/console/subscriptions", url.Values{"name": {"to-kafka"}, "destination_type": {"kafka"},
			"brokers": {"127.0.0.1:9093"}, "topic": {"tenant.events"}, "event_type": {"transaction.posted@1"},
			"url": {"https://example.com/hook"}, "headers": {"X-A: b"}, "auth_type": {"bearer"}, "auth_token": {"t0ken"}})
		if got.status != 201 {
			t.Fatalf("create: %d\n%s", got.status, got.body)
		}
		id := regexp.MustCompile(`/console/subscriptions/([^"]+)"`).FindStringSubmatch(got.body)[1]
		_, body := h.apiCall("GET", "/v1/subscriptions/"+id, "", "acme")
		if !strings.Contains(body, `"type":"kafka"`) || strings.Contains(body, "example.com") || !strings.Contains(body, `"auth":null`) || strings.Contains(body, "t0ken") || strings.Contains(body, "X-A") {
			t.Fatalf("the kafka subscription kept another kind's fields: %s", body)
		}
	})
}
