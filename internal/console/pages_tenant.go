package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

type m = map[string]any

// tenantReady: tenant pages need a tenant; an admin who chose none is shown
// the picker instead.
func (c *Console) tenantReady(w http.ResponseWriter, r *http.Request, s *session, nav, title string) bool {
	if s.Tenant != "" {
		return true
	}
	c.show(w, r, s, http.StatusOK, "choose", nav, title, nil)
	return false
}

// tenantOf: the page of one delivery, subscription or event (kind, id)
// is its tenant's (docs/console.md). An operator who follows a link to it acts on
// the tenant that holds it, found with the API's lookup, whatever tenant
// was chosen before (none, or another): the choice is kept, as the picker
// keeps it, so the page's buttons act on that tenant too, and the page
// says so. A ce-id several tenants hold is the chosen tenant's when it is
// one of them; else the picker page names them.
func (c *Console) tenantOf(w http.ResponseWriter, r *http.Request, s *session, kind, nav, title string) bool {
	if !s.Admin() {
		return true
	}
	var found struct {
		TenantIDs []string `json:"tenant_ids"`
	}
	q := url.Values{"kind": {kind}, "id": {r.PathValue("id")}}
	if err := c.call(r, s, "GET", "/v1/admin/lookup?"+q.Encode(), nil, &found); err != nil {
		c.fail(w, r, s, err)
		return false
	}
	for _, t := range found.TenantIDs {
		if t == s.Tenant {
			return true
		}
	}
	switch len(found.TenantIDs) {
	case 0:
		if s.Tenant != "" {
			return true // the page answers its 404
		}
		c.renderError(w, r, s, http.StatusNotFound, "No tenant has a "+kind+" with this id.")
		return false
	case 1:
		s.Tenant = found.TenantIDs[0]
		s.resolved = kind
		c.setCookie(w, r, tenantCookie, s.Tenant, tenantCookieAge)
		return true
	}
	c.show(w, r, s, http.StatusOK, "choose", nav, title, m{"Holders": found.TenantIDs, "Kind": kind})
	return false
}

// show renders a page; an admin's tenant pages carry the tenant picker.
func (c *Console) show(w http.ResponseWriter, r *http.Request, s *session, status int, name, nav, title string, data any) {
	v := view{S: s, Nav: nav, Title: title, Data: data, Flash: flash(r)}
	if s.Admin() && nav != "operator" && c.deps.API.ServedTenant() == "" {
		// A single-tenant hub offers no other tenant: no picker.
		var ts struct{ Data []m }
		if err := c.call(r, s, "GET", "/v1/tenants?limit=500", nil, &ts); err == nil {
			v.Tenants = ts.Data
		}
	}
	if s.resolved != "" {
		name := s.Tenant
		if n, ok := tenantNames(v.Tenants)[s.Tenant]; ok {
			name = n + " (" + s.Tenant + ")"
		}
		v.Flash = strings.TrimSpace(v.Flash + " Acting on tenant " + name + ", which holds this " + s.resolved + ".")
	}
	c.renderView(w, r, status, name, v)
}

// flashes are the fixed messages a redirect after a write may name.
var flashes = map[string]string{
	"created": "Created.", "updated": "Saved.", "deleted": "Deleted.", "enabled": "Enabled.",
	"disabled": "Disabled.", "replayed": "Replay queued.", "verified": "Verified: the destination answered the challenge.",
	"status": "Status changed.", "key-deleted": "Key deleted.", "link-revoked": "Portal link revoked: its session, if any, has ended.",
}

func flash(r *http.Request) string { return flashes[r.URL.Query().Get("done")] }

func (c *Console) overview(w http.ResponseWriter, r *http.Request, s *session) {
	if s.Admin() {
		stats := c.operatorStats(r, s)
		c.hubHealth(r, s, stats)
		c.show(w, r, s, http.StatusOK, "overview_operator", "overview", "Overview", stats)
		return
	}
	subs, err := c.subscriptionRows(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.show(w, r, s, http.StatusOK, "overview_tenant", "overview", "Overview", m{"Subscriptions": subs})
}

// subscriptionRows are the tenant's subscriptions with their 24 h health.
func (c *Console) subscriptionRows(r *http.Request, s *session) ([]m, error) {
	var list struct {
		Data       []m
		NextCursor *string `json:"next_cursor"`
	}
	if err := c.call(r, s, "GET", "/v1/subscriptions?limit=100", nil, &list); err != nil {
		return nil, err
	}
	for _, sub := range list.Data {
		var h m
		if err := c.call(r, s, "GET", "/v1/subscriptions/"+url.PathEscape(str(sub["id"]))+"/health?window=24h", nil, &h); err == nil {
			sub["health"] = h
		}
	}
	return list.Data, nil
}

func (c *Console) subscriptions(w http.ResponseWriter, r *http.Request, s *session) {
	if !c.tenantReady(w, r, s, "subscriptions", "Subscriptions") {
		return
	}
	subs, err := c.subscriptionRows(r, s)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.show(w, r, s, http.StatusOK, "subscriptions", "subscriptions", "Subscriptions", m{"Subscriptions": subs})
}

func (c *Console) subscription(w http.ResponseWriter, r *http.Request, s *session) {
	if !c.tenantOf(w, r, s, "subscription", "subscriptions", "Subscription") {
		return
	}
	id := url.PathEscape(r.PathValue("id"))
	var sub, health m
	if err := c.call(r, s, "GET", "/v1/subscriptions/"+id, nil, &sub); err != nil {
		c.fail(w, r, s, err)
		return
	}
	window := r.URL.Query().Get("window")
	fitted := window == ""
	var err error
	if fitted {
		window, health, err = c.fitHealth(r, s, r.PathValue("id"))
	} else {
		err = c.call(r, s, "GET", "/v1/subscriptions/"+id+"/health?window="+url.QueryEscape(window), nil, &health)
	}
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	var recent, dead struct{ Data []m }
	if err := c.call(r, s, "GET", "/v1/subscriptions/"+id+"/deliveries?limit=20", nil, &recent); err != nil {
		c.fail(w, r, s, err)
		return
	}
	if err := c.call(r, s, "GET", "/v1/subscriptions/"+id+"/deliveries?status=dead_lettered&limit=20", nil, &dead); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.show(w, r, s, http.StatusOK, "subscription", "subscriptions", "Subscription "+str(sub["name"]), m{
		"Sub": sub, "Health": health, "Chart": healthChart(health, windowDuration(window)), "Recent": recent.Data, "Dead": dead.Data,
		"Window": window, "WindowLabel": windowLabel(window), "Fitted": fitted, "Windows": healthWindows,
	})
}

func (c *Console) deliveries(w http.ResponseWriter, r *http.Request, s *session) {
	if !c.tenantReady(w, r, s, "deliveries", "Deliveries") {
		return
	}
	q := r.URL.Query()
	params := url.Values{"limit": {"50"}}
	form := m{}
	for _, k := range []string{"status", "subscription_id", "event_id", "since", "until", "cursor"} {
		v := strings.TrimSpace(q.Get(k))
		form[k] = v
		if v == "" {
			continue
		}
		if k == "since" || k == "until" {
			v = rfc3339(v)
		}
		params.Set(k, v)
	}
	var list struct {
		Data       []m
		NextCursor *string `json:"next_cursor"`
	}
	var searchErr string
	if err := c.call(r, s, "GET", "/v1/deliveries?"+params.Encode(), nil, &list); err != nil {
		ae, ok := err.(*apiError)
		if !ok || ae.Status != http.StatusBadRequest || s.Tenant == "" {
			c.fail(w, r, s, err)
			return
		}
		searchErr = ae.Message // a bad filter: the form says which
	}
	names := c.subscriptionNames(r, s)
	nameRows(list.Data, names)
	next := ""
	if list.NextCursor != nil {
		nq := url.Values{}
		for k, v := range form {
			if v != "" && k != "cursor" {
				nq.Set(k, v.(string))
			}
		}
		nq.Set("cursor", *list.NextCursor)
		next = nq.Encode()
	}
	c.show(w, r, s, http.StatusOK, "deliveries", "deliveries", "Deliveries", m{
		"Form": form, "Deliveries": list.Data, "Next": next, "Error": searchErr, "Subscriptions": byName(names),
		"Statuses": []string{"pending", "in_flight", "succeeded", "dead_lettered"},
	})
}

// rfc3339 accepts what a datetime-local input sends (2006-01-02T15:04, in
// UTC) as well as RFC 3339.
func rfc3339(v string) string {
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC().Format(time.RFC3339)
		}
	}
	return v
}

func (c *Console) delivery(w http.ResponseWriter, r *http.Request, s *session) {
	if !c.tenantOf(w, r, s, "delivery", "deliveries", "Delivery") {
		return
	}
	var d m
	if err := c.call(r, s, "GET", "/v1/deliveries/"+url.PathEscape(r.PathValue("id")), nil, &d); err != nil {
		c.fail(w, r, s, err)
		return
	}
	// The names before the ids: the subscription's, the event's type (the
	// delivery carries it). A subscription deleted or an event past
	// retention leaves its id.
	var sub m
	subName, eventType := "", ""
	if t, ok := d["event_type"].(string); ok {
		eventType = t
	}
	if c.call(r, s, "GET", "/v1/subscriptions/"+url.PathEscape(str(d["subscription_id"])), nil, &sub) == nil {
		subName = str(sub["name"])
	}
	title := "Delivery to " + str(d["subscription_id"])
	if subName != "" {
		title = "Delivery to " + subName
	}
	data := m{"D": d, "SubName": subName, "EventType": eventType, "Hold": c.holdOf(d, sub)}
	// The event's payload, bounded: an event past retention has none.
	var ev m
	if c.call(r, s, "GET", "/v1/events/"+url.PathEscape(str(d["event_id"])), nil, &ev) == nil {
		data["Payload"], data["PayloadCut"] = boundedPayload(ev)
		data["HasPayload"] = true
	}
	c.show(w, r, s, http.StatusOK, "delivery", "deliveries", title, data)
}

// holdOf says why a pending delivery waits, when the page can tell: the
// subscription's breaker (this process's, as GET /v1/subscriptions/{id}
// shows it) is open, so its due attempts are shed until the probe time
// (their next attempt); half-open, so one probe attempt goes first; or it
// is due already and waits for a claim (behind its subscription's earlier
// deliveries when they go one at a time). nil: nothing to say.
func (c *Console) holdOf(d, sub m) m {
	if str(d["status"]) != "pending" {
		return nil
	}
	next, err := time.Parse(time.RFC3339Nano, str(d["next_attempt_at"]))
	if err != nil {
		return nil
	}
	ordered := false
	if n, ok := toFloat(sub["max_in_flight"]); ok && n <= 1 {
		ordered = true
	}
	switch str(sub["breaker_state"]) {
	case "open":
		return m{"Kind": "open", "At": d["next_attempt_at"], "Ordered": ordered}
	case "half_open":
		return m{"Kind": "half_open", "At": d["next_attempt_at"], "Ordered": ordered}
	}
	if c.now().Sub(next) >= dueNoticeAfter {
		return m{"Kind": "due", "At": d["next_attempt_at"], "Ordered": ordered}
	}
	return nil
}

// dueNoticeAfter is how long past its next attempt a pending delivery
// waits before its page says it is due and waiting for a claim: a
// delivery is claimed within moments of coming due.
const dueNoticeAfter = 5 * time.Second

func (c *Console) replayDelivery(w http.ResponseWriter, r *http.Request, s *session) {
	var job m
	if err := c.call(r, s, "POST", "/v1/deliveries/"+url.PathEscape(r.PathValue("id"))+"/replay", m{}, &job); err != nil {
		c.fail(w, r, s, err)
		return
	}
	http.Redirect(w, r, Prefix+"deliveries/"+url.PathEscape(str(job["id"]))+"?done=replayed", http.StatusSeeOther)
}

func (c *Console) events(w http.ResponseWriter, r *http.Request, s *session) {
	if !c.tenantReady(w, r, s, "events", "Events") {
		return
	}
	if id := strings.TrimSpace(r.URL.Query().Get("id")); id != "" {
		http.Redirect(w, r, Prefix+"events/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	before := r.URL.Query().Get("before")
	evs, next, err := c.newestEvents(r, s, before)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.show(w, r, s, http.StatusOK, "events", "events", "Events", m{"Events": evs, "Next": next})
}

func (c *Console) event(w http.ResponseWriter, r *http.Request, s *session) {
	if !c.tenantOf(w, r, s, "event", "events", "Event") {
		return
	}
	var ev m
	if err := c.call(r, s, "GET", "/v1/events/"+url.PathEscape(r.PathValue("id")), nil, &ev); err != nil {
		c.fail(w, r, s, err)
		return
	}
	if ds, ok := ev["deliveries"].([]any); ok && len(ds) > 0 {
		rows := make([]m, 0, len(ds))
		for _, d := range ds {
			if row, ok := d.(map[string]any); ok {
				rows = append(rows, row)
			}
		}
		nameRows(rows, c.subscriptionNames(r, s))
	}
	c.show(w, r, s, http.StatusOK, "event", "events", "Event "+str(ev["type"]), m{"E": ev})
}

func (c *Console) eventTypes(w http.ResponseWriter, r *http.Request, s *session) {
	if !c.tenantReady(w, r, s, "event-types", "Event types") {
		return
	}
	var list struct{ Data []m }
	if err := c.call(r, s, "GET", "/v1/event-types", nil, &list); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.show(w, r, s, http.StatusOK, "event_types", "event-types", "Event types", m{"Types": list.Data})
}
