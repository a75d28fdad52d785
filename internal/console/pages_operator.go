package console

import (
	"net/http"
	"net/url"
	"strings"
)

// Operator pages: the API answers 403 to a tenant's session, as it does to
// a tenant key.

func (c *Console) tenants(w http.ResponseWriter, r *http.Request, s *session) {
	data, next, err := c.listPage(r, s, "/v1/tenants")
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.show(w, r, s, http.StatusOK, "tenants", "operator", "Tenants", m{"Tenants": data, "Next": next, "Served": c.deps.API.ServedTenant()})
}

func (c *Console) createTenant(w http.ResponseWriter, r *http.Request, s *session) {
	body := m{"id": strings.TrimSpace(r.PostFormValue("id"))}
	if n := strings.TrimSpace(r.PostFormValue("name")); n != "" {
		body["name"] = n
	}
	if err := c.call(r, s, "POST", "/v1/tenants", body, nil); err != nil {
		if ae, ok := err.(*apiError); ok && (ae.Status == 400 || ae.Status == 409) {
			c.renderError(w, r, s, ae.Status, ae.Message)
			return
		}
		c.fail(w, r, s, err)
		return
	}
	http.Redirect(w, r, Prefix+"tenants/"+url.PathEscape(body["id"].(string))+"?done=created", http.StatusSeeOther)
}

func (c *Console) tenant(w http.ResponseWriter, r *http.Request, s *session) {
	// A tenant may read its own tenant from the API (its badge's name), but
	// this page is the operator's, whichever tenant it names.
	if !s.Admin() {
		c.renderError(w, r, s, http.StatusForbidden, "this endpoint needs the admin token")
		return
	}
	id := url.PathEscape(r.PathValue("id"))
	var t m
	var keys struct{ Data []m }
	if err := c.call(r, s, "GET", "/v1/tenants/"+id, nil, &t); err != nil {
		c.fail(w, r, s, err)
		return
	}
	if err := c.call(r, s, "GET", "/v1/tenants/"+id+"/keys", nil, &keys); err != nil {
		c.fail(w, r, s, err)
		return
	}
	// The live links: the first 100 (they last a day at most).
	var links struct{ Data []m }
	if err := c.call(r, s, "GET", "/v1/tenants/"+id+"/portal-links?limit=100", nil, &links); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.show(w, r, s, http.StatusOK, "tenant", "operator", "Tenant "+str(t["id"]), m{"T": t, "Keys": keys.Data, "Links": links.Data})
}

// tenantAction: status, keys (create), delete-key, portal-link, revoke-link.
func (c *Console) tenantAction(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	base := "/v1/tenants/" + url.PathEscape(id)
	page := Prefix + "tenants/" + url.PathEscape(id)
	switch r.PathValue("op") {
	case "status":
		if err := c.call(r, s, "PATCH", base, m{"status": r.PostFormValue("status")}, nil); err != nil {
			c.fail(w, r, s, err)
			return
		}
		http.Redirect(w, r, page+"?done=status", http.StatusSeeOther)
	case "keys":
		var k m
		if err := c.call(r, s, "POST", base+"/keys", m{}, &k); err != nil {
			c.fail(w, r, s, err)
			return
		}
		c.show(w, r, s, http.StatusCreated, "shown_once", "operator", "API key created", m{
			"Back": page, "Secret": k["key"], "Message": "The API key " + str(k["id"]) + " is shown only this once: copy it now.",
		})
	case "delete-key":
		if err := c.call(r, s, "DELETE", base+"/keys/"+url.PathEscape(r.PostFormValue("key_id")), nil, nil); err != nil {
			c.fail(w, r, s, err)
			return
		}
		http.Redirect(w, r, page+"?done=key-deleted", http.StatusSeeOther)
	case "portal-link":
		var l m
		if err := c.call(r, s, "POST", base+"/portal-links", m{"ttl": strOr(r.PostFormValue("ttl"), "1h")}, &l); err != nil {
			if ae, ok := err.(*apiError); ok && ae.Status == 400 {
				c.renderError(w, r, s, ae.Status, ae.Message)
				return
			}
			c.fail(w, r, s, err)
			return
		}
		c.show(w, r, s, http.StatusCreated, "shown_once", "operator", "Portal link created", m{
			"Back": page, "Secret": l["url"], "Link": true, "Expires": l["expires_at"],
			"Message": "Whoever opens this link first, before it expires, gets a console session for tenant " + id + " alone, until the link expires or is revoked; the link then opens nothing more. It is shown only this once.",
		})
	case "revoke-link":
		if err := c.call(r, s, "DELETE", base+"/portal-links/"+url.PathEscape(r.PostFormValue("link_id")), nil, nil); err != nil {
			c.fail(w, r, s, err)
			return
		}
		http.Redirect(w, r, page+"?done=link-revoked", http.StatusSeeOther)
	default:
		c.renderError(w, r, s, http.StatusNotFound, "No such action.")
	}
}

func (c *Console) rejections(w http.ResponseWriter, r *http.Request, s *session) {
	data, next, err := c.listPage(r, s, "/v1/admin/rejections")
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.show(w, r, s, http.StatusOK, "rejections", "operator", "Rejections", m{"Rejections": data, "Next": next})
}

// replayRejection reads a rejected record again at its source and ingests
// it (POST /v1/admin/rejections/{id}/replay), and shows its new verdict.
func (c *Console) replayRejection(w http.ResponseWriter, r *http.Request, s *session) {
	var res m
	if err := c.call(r, s, "POST", "/v1/admin/rejections/"+url.PathEscape(r.PathValue("id"))+"/replay", m{}, &res); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.show(w, r, s, http.StatusOK, "result", "operator", "Record replayed", m{
		"Back": Prefix + "rejections", "BackLabel": "Back to the rejections", "Title": "Record replayed", "Rejection": res,
	})
}

func (c *Console) manifests(w http.ResponseWriter, r *http.Request, s *session) {
	var list struct{ Data []m }
	if err := c.call(r, s, "GET", "/v1/admin/manifests", nil, &list); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.show(w, r, s, http.StatusOK, "manifests", "operator", "Manifests", m{"Manifests": list.Data})
}

// listPage reads one page of 100 of a paged API list at the request's
// cursor: its items and the next cursor (nil on the last page).
func (c *Console) listPage(r *http.Request, s *session, path string) ([]m, *string, error) {
	var list struct {
		Data       []m
		NextCursor *string `json:"next_cursor"`
	}
	q := url.Values{"limit": {"100"}}
	if cur := r.URL.Query().Get("cursor"); cur != "" {
		q.Set("cursor", cur)
	}
	err := c.call(r, s, "GET", path+"?"+q.Encode(), nil, &list)
	return list.Data, list.NextCursor, err
}
