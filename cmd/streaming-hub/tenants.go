package main

// tenants.go: `streaming-hub tenants`, the tenant roster (admin token).

import (
	"io"
)

var tenantsGroup = group{
	name: "tenants",
	about: "Manages the tenant roster through the admin API: STREAMING_HUB_TOKEN must be the admin token\n" +
		"(get also takes a tenant API key, for its own tenant).",
	subs: []subcommand{
		{"list", "[--cursor C] [--limit N] [--all]", "list tenants, one page", tenantsList},
		{"get", "<id>", "show one tenant (a tenant key: its own)", tenantsGet},
		{"create", "--id ID [--name NAME]", "add a tenant to the roster", tenantsCreate},
		{"update", "<id> [--name NAME] [--status active|inactive]", "rename, deactivate or reactivate a tenant", tenantsUpdate},
		{"portal-link", "<id> [--ttl 1h]", "make a console link that opens a one-tenant session (as portal-links create)", tenantsPortalLink},
	},
}

func runTenants(args []string, e env) int { return tenantsGroup.run(args, e) }

// tenantView is a tenant as the API shows it.
type tenantView struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Status    string `json:"status"`
	CreatedAt string `json:"created_at"`
}

func (t *tenantView) print(w io.Writer) {
	fields(w, "id", t.ID, "name", t.Name, "status", t.Status, "created_at", t.CreatedAt)
}

func tenantsList(args []string, e env) int {
	c := newAPICmd(e, "tenants list", "[--cursor C] [--limit N] [flags]",
		"Lists the tenants of the roster, one page; when there are more, the last line on stderr\nsays which --cursor to pass next. Needs the admin token.", false)
	p := c.pageFlags()
	if code, ok := c.parse(args); !ok {
		return code
	}
	return listCmd(c, "/v1/tenants", p, nil, []string{"ID", "NAME", "STATUS", "CREATED"}, func(t tenantView) []string {
		return []string{t.ID, t.Name, t.Status, t.CreatedAt}
	})
}

func tenantsGet(args []string, e env) int {
	c := newAPICmd(e, "tenants get", "<id> [flags]",
		"Shows one tenant. The admin token reads any tenant; a tenant API key reads its own (any\nother id is not found).", false, "<id>")
	if code, ok := c.parse(args); !ok {
		return code
	}
	var t tenantView
	return c.do("GET", "/v1/tenants/"+pathEscape(c.args[0]), nil, nil, &t, t.print)
}

func tenantsCreate(args []string, e env) int {
	c := newAPICmd(e, "tenants create", "--id ID [--name NAME] [--status active|inactive] [flags]",
		"Adds a tenant to the roster; its events are admitted from the very next record.\nNeeds the admin token.", false)
	id := c.fs.String("id", "", "tenant id, as producers send it in ce-tenantid (required)")
	name := c.fs.String("name", "", "display name (default: the id)")
	status := c.fs.String("status", "", "active (default) or inactive")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *id == "" {
		return c.usageError("--id: required")
	}
	body := map[string]string{"id": *id}
	if *name != "" {
		body["name"] = *name
	}
	if *status != "" {
		body["status"] = *status
	}
	var t tenantView
	return c.do("POST", "/v1/tenants", nil, body, &t, t.print)
}

func tenantsUpdate(args []string, e env) int {
	c := newAPICmd(e, "tenants update", "<id> [--name NAME] [--status active|inactive] [flags]",
		"Renames a tenant or changes its status; an inactive tenant's events are discarded at\ningest, and its API keys are refused. Needs the admin token.", false, "<id>")
	name := c.fs.String("name", "", "new display name")
	status := c.fs.String("status", "", "active or inactive")
	if code, ok := c.parse(args); !ok {
		return code
	}
	body := map[string]string{}
	if c.set["name"] {
		body["name"] = *name
	}
	if c.set["status"] {
		body["status"] = *status
	}
	if len(body) == 0 {
		return c.usageError("nothing to change: give --name or --status")
	}
	var t tenantView
	return c.do("PATCH", "/v1/tenants/"+pathEscape(c.args[0]), nil, body, &t, t.print)
}

// tenantsPortalLink is `portal-links create`, kept under tenants.
func tenantsPortalLink(args []string, e env) int {
	return createPortalLink(args, e, "tenants portal-link", "<id>")
}
