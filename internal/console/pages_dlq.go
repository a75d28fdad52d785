package console

import (
	"net/http"
	"net/url"
)

// dlq: the records of the producers' DLQ topics (docs/lerian-platform.md),
// newest first, paged, filtered by topic and tenant (operator only: the API
// answers a tenant 403).
func (c *Console) dlq(w http.ResponseWriter, r *http.Request, s *session) {
	var list struct {
		Data       []m
		NextCursor *string `json:"next_cursor"`
	}
	in := r.URL.Query()
	q := url.Values{"limit": {"100"}}
	filters := url.Values{}
	for _, k := range []string{"topic", "tenant_id", "since"} {
		if v := in.Get(k); v != "" {
			filters.Set(k, v)
			if k == "since" {
				v = rfc3339(v)
			}
			q.Set(k, v)
		}
	}
	if cur := in.Get("cursor"); cur != "" {
		q.Set("cursor", cur)
	}
	if err := c.call(r, s, "GET", "/v1/admin/dlq?"+q.Encode(), nil, &list); err != nil {
		if ae, ok := err.(*apiError); ok && ae.Status == http.StatusBadRequest {
			c.renderError(w, r, s, ae.Status, ae.Message) // a bad filter: the message names it
			return
		}
		c.fail(w, r, s, err)
		return
	}
	var tenants struct{ Data []m }
	c.call(r, s, "GET", "/v1/tenants?limit=500", nil, &tenants) // names only: ids serve without them
	var older string
	if list.NextCursor != nil {
		filters.Set("cursor", *list.NextCursor)
		older = "/console/dlq?" + filters.Encode()
	}
	c.show(w, r, s, http.StatusOK, "dlq", "operator", "Producer DLQ", m{
		"Records": list.Data, "Older": older, "Topic": in.Get("topic"), "TenantID": in.Get("tenant_id"), "Since": in.Get("since"),
		"TenantList": tenants.Data, "TenantNames": tenantNames(tenants.Data),
	})
}
