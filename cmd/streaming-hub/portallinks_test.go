package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// portal-links create, list and revoke: the list shows each live link and
// whether it was opened, never the link; revoking ends it.
func TestCLI_PortalLinks(t *testing.T) {
	h := startHub(t)
	admin := newCLI(t, h.URL(), h.Config.AdminToken)
	admin.ok("tenants", "create", "--id", "acme")

	// --all walks every page: three tenants one per page make one list.
	admin.ok("tenants", "create", "--id", "beta")
	admin.ok("tenants", "create", "--id", "gamma")
	code, out, errOut := runCmd(admin.vars, "tenants", "list", "--limit", "1")
	if code != exitOK || strings.Count(out, "\n") != 2 || !strings.HasPrefix(errOut, "more: --cursor ") {
		t.Fatalf("one page: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd(admin.vars, "tenants", "list", "--limit", "1", "--all")
	if code != exitOK || errOut != "" {
		t.Fatalf("--all: exit %d\n%s%s", code, out, errOut)
	}
	for _, id := range []string{"acme", "beta", "gamma"} {
		row(t, out, id)
	}
	var all struct {
		Data       []tenantView `json:"data"`
		NextCursor *string      `json:"next_cursor"`
	}
	admin.json(&all, "tenants", "list", "--limit", "1", "--all")
	if len(all.Data) < 3 || all.NextCursor != nil {
		t.Fatalf("--all -o json: %d tenants, next %v", len(all.Data), all.NextCursor)
	}

	out = admin.ok("portal-links", "create", "acme", "--ttl", "30m")
	id, link := field(t, out, "id"), field(t, out, "url")
	if !strings.HasPrefix(id, "pl_") || !strings.HasPrefix(link, h.URL()+"/console/portal/") {
		t.Fatalf("portal-links create:\n%s", out)
	}
	out = admin.ok("tenants", "portal-link", "acme")
	other := field(t, out, "id")
	if !strings.HasPrefix(other, "pl_") || other == id {
		t.Fatalf("tenants portal-link:\n%s", out)
	}

	out = admin.ok("portal-links", "list", "acme")
	if r := row(t, out, id); len(r) != 4 || r[3] != "-" {
		t.Fatalf("unopened link row %q in\n%s", r, out)
	}
	if strings.Contains(out, strings.TrimPrefix(link, h.URL()+"/console/portal/")) {
		t.Fatalf("the list shows a link's token:\n%s", out)
	}
	openLink(t, link)
	if r := row(t, admin.ok("portal-links", "list", "acme"), id); r[3] == "-" {
		t.Fatalf("opened link row %q", r)
	}

	if out := admin.ok("portal-links", "revoke", "acme", id, "--yes"); out != "revoked portal link "+id+" of tenant acme\n" {
		t.Fatalf("portal-links revoke: %q", out)
	}
	if out := admin.ok("portal-links", "list", "acme"); strings.Contains(out, id) || !strings.Contains(out, other) {
		t.Fatalf("after revoking:\n%s", out)
	}
	if errOut := admin.fail(exitError, "portal-links", "revoke", "acme", id, "-y"); !strings.HasPrefix(errOut, "streaming-hub: 404 not_found: ") {
		t.Fatalf("revoking twice: %q", errOut)
	}
	if code, _, errOut := runCmd(admin.vars, "portal-links", "revoke", "acme"); code != exitUsage || errOut == "" {
		t.Fatalf("revoke without a link id: exit %d, %q", code, errOut)
	}
}

// openLink opens a portal link as a browser does: the page, then its form.
func openLink(t *testing.T, link string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindSubmatch(body)
	if res.StatusCode != 200 || m == nil {
		t.Fatalf("GET %s: %d\n%s", link, res.StatusCode, body)
	}
	u, _ := url.Parse(link)
	req, _ := http.NewRequest("POST", link, strings.NewReader(url.Values{"csrf": {string(m[1])}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	res, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST %s: %d", link, res.StatusCode)
	}
}
