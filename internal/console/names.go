package console

import (
	"net/http"
	"net/url"
	"sort"
)

// Names before ids (docs/console.md): a page that lists a tenant's deliveries
// shows each one's subscription by name, read with one list call for the page
// (never one call a row); an id whose name is not known is shown as the id.

// subscriptionNames are the tenant's subscriptions' names by id: the first
// 500 (the API's page), which is every subscription of all but the largest
// tenants; the rest are shown by id. A failed call names nothing: the page
// still shows the ids.
func (c *Console) subscriptionNames(r *http.Request, s *session) map[string]string {
	var list struct{ Data []m }
	names := map[string]string{}
	if err := c.call(r, s, "GET", "/v1/subscriptions?limit=500", nil, &list); err != nil {
		return names
	}
	for _, sub := range list.Data {
		names[str(sub["id"])] = str(sub["name"])
	}
	return names
}

// nameRows sets each row's subscription_name from names.
func nameRows(rows []m, names map[string]string) {
	for _, row := range rows {
		if n, ok := names[str(row["subscription_id"])]; ok {
			row["subscription_name"] = n
		}
	}
}

// tenantNames are the tenants' names by id, from the admin's picker list
// (already read for the page); a tenant without a name of its own (the
// API names it by its id) is shown by id.
func tenantNames(tenants []m) map[string]string {
	names := map[string]string{}
	for _, t := range tenants {
		if n := str(t["name"]); n != "—" && n != str(t["id"]) {
			names[str(t["id"])] = n
		}
	}
	return names
}

// subscriptionChoice is one entry of a page's subscription picker.
type subscriptionChoice struct{ ID, Name string }

// byName are names as a picker lists them: by name, then id.
func byName(names map[string]string) []subscriptionChoice {
	out := make([]subscriptionChoice, 0, len(names))
	for id, n := range names {
		out = append(out, subscriptionChoice{ID: id, Name: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// tenantName is a tenant session's own tenant's name, for its badge on
// every page: read as the tenant may read it (GET /v1/tenants/{id} of its
// own tenant), one call a page, so a rename shows at once. Its id when
// the call fails (the page still shows who it is).
func (c *Console) tenantName(r *http.Request, s *session) string {
	var t struct{ Name string }
	if s.Tenant == "" || c.call(r, s, "GET", "/v1/tenants/"+url.PathEscape(s.Tenant), nil, &t) != nil || t.Name == "" {
		return s.Tenant
	}
	return t.Name
}
