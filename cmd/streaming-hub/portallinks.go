package main

// portallinks.go: `streaming-hub portal-links`, a tenant's console portal
// links (admin token).

import (
	"fmt"
	"io"
	"strings"
)

var portalLinksGroup = group{
	name: "portal-links",
	about: "Makes, lists and revokes a tenant's console portal links through the admin API:\n" +
		"STREAMING_HUB_TOKEN must be the admin token. A link opens one console session for its\n" +
		"tenant alone, once, until it expires or is revoked.",
	subs: []subcommand{
		{"create", "<tenant> [--ttl 1h]", "make a portal link (its URL is shown once)", portalLinksCreate},
		{"list", "<tenant> [--cursor C] [--limit N]", "list a tenant's live portal links and whether each was opened", portalLinksList},
		{"revoke", "<tenant> <link_id> [--yes]", "revoke a portal link and end the session it opened", portalLinksRevoke},
	},
}

func runPortalLinks(args []string, e env) int { return portalLinksGroup.run(args, e) }

// portalLinkView is a link as the API lists it.
type portalLinkView struct {
	ID        string  `json:"id"`
	CreatedAt string  `json:"created_at"`
	ExpiresAt string  `json:"expires_at"`
	UsedAt    *string `json:"used_at"`
}

func portalLinksCreate(args []string, e env) int {
	return createPortalLink(args, e, "portal-links create", "<tenant>")
}

// createPortalLink is `portal-links create` and `tenants portal-link`.
func createPortalLink(args []string, e env, name, arg string) int {
	c := newAPICmd(e, name, arg+" [--ttl 1h] [flags]",
		"Makes a console portal link for one tenant: whoever opens it first, before it expires,\n"+
			"gets a console session for that tenant alone (to embed in your own product), until the\n"+
			"link expires or is revoked. The link opens one session, once; its URL is shown only now.\n"+
			"Needs the admin token.", false, arg)
	ttl := c.fs.String("ttl", "1h", "how long the link and its session last: above 0s, at most 24h")
	if code, ok := c.parse(args); !ok {
		return code
	}
	var l struct {
		ID        string `json:"id"`
		URL       string `json:"url"`
		ExpiresAt string `json:"expires_at"`
	}
	return c.do("POST", "/v1/tenants/"+pathEscape(c.args[0])+"/portal-links", nil, map[string]string{"ttl": *ttl}, &l, func(w io.Writer) {
		fields(w, "id", l.ID, "url", strings.TrimSuffix(c.server, "/")+l.URL, "expires_at", l.ExpiresAt)
	})
}

func portalLinksList(args []string, e env) int {
	c := newAPICmd(e, "portal-links list", "<tenant> [--cursor C] [--limit N] [flags]",
		"Lists a tenant's live portal links (neither expired nor revoked), one page: when each\n"+
			"was made, when it expires, and when it was opened (- if not yet); never the link itself.\n"+
			"Needs the admin token.", false, "<tenant>")
	p := c.pageFlags()
	if code, ok := c.parse(args); !ok {
		return code
	}
	return listCmd(c, "/v1/tenants/"+pathEscape(c.args[0])+"/portal-links", p, nil, []string{"ID", "CREATED", "EXPIRES", "OPENED"},
		func(l portalLinkView) []string {
			opened := "-"
			if l.UsedAt != nil {
				opened = *l.UsedAt
			}
			return []string{l.ID, l.CreatedAt, l.ExpiresAt, opened}
		})
}

func portalLinksRevoke(args []string, e env) int {
	c := newAPICmd(e, "portal-links revoke", "<tenant> <link_id> [--yes] [flags]",
		"Revokes a portal link: it opens nothing from now on, and the console session it opened\nends at once. Needs the admin token. Asks first on a terminal; pass --yes in scripts.", false, "<tenant>", "<link_id>")
	yes := c.yesFlag()
	if code, ok := c.parse(args); !ok {
		return code
	}
	if code, ok := c.confirm(*yes, "Revoke portal link "+c.args[1]+" of tenant "+c.args[0]+"?"); !ok {
		return code
	}
	return c.do("DELETE", "/v1/tenants/"+pathEscape(c.args[0])+"/portal-links/"+pathEscape(c.args[1]), nil, nil, nil, func(w io.Writer) {
		fmt.Fprintf(w, "revoked portal link %s of tenant %s\n", c.args[1], c.args[0])
	})
}
