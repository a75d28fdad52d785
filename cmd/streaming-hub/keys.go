package main

// keys.go: `streaming-hub keys`, tenant API keys (admin token).

import (
	"fmt"
	"io"
)

var keysGroup = group{
	name: "keys",
	about: "Creates and revokes a tenant's API keys through the admin API: STREAMING_HUB_TOKEN must\n" +
		"be the admin token. A key acts only on its own tenant; use it as STREAMING_HUB_TOKEN.",
	subs: []subcommand{
		{"create", "<tenant>", "create an API key for a tenant (shown once)", keysCreate},
		{"delete", "<tenant> <key_id> [--yes]", "revoke an API key, at once", keysDelete},
		{"list", "<tenant>", "list a tenant's API keys and when each was last used", keysList},
	},
}

func runKeys(args []string, e env) int { return keysGroup.run(args, e) }

func keysCreate(args []string, e env) int {
	c := newAPICmd(e, "keys create", "<tenant> [flags]",
		"Creates an API key for a tenant. The key is in this answer and nowhere else, ever:\nstore it now.", false, "<tenant>")
	if code, ok := c.parse(args); !ok {
		return code
	}
	var k struct {
		ID        string `json:"id"`
		Key       string `json:"key"`
		TenantID  string `json:"tenant_id"`
		CreatedAt string `json:"created_at"`
	}
	return c.do("POST", "/v1/tenants/"+pathEscape(c.args[0])+"/keys", nil, []byte("{}"), &k, func(w io.Writer) {
		fields(w, "id", k.ID, "tenant_id", k.TenantID, "key", k.Key, "created_at", k.CreatedAt)
		fmt.Fprintln(c.e.stderr, "The key is shown only now: store it. Use it as STREAMING_HUB_TOKEN to act as the tenant.")
	})
}

func keysDelete(args []string, e env) int {
	c := newAPICmd(e, "keys delete", "<tenant> <key_id> [--yes] [flags]",
		"Revokes an API key: requests with it are refused from now on. Asks first on a terminal;\npass --yes in scripts.", false, "<tenant>", "<key_id>")
	yes := c.yesFlag()
	if code, ok := c.parse(args); !ok {
		return code
	}
	if code, ok := c.confirm(*yes, "Revoke key "+c.args[1]+" of tenant "+c.args[0]+"?"); !ok {
		return code
	}
	return c.do("DELETE", "/v1/tenants/"+pathEscape(c.args[0])+"/keys/"+pathEscape(c.args[1]), nil, nil, nil, func(w io.Writer) {
		fmt.Fprintf(w, "deleted key %s of tenant %s\n", c.args[1], c.args[0])
	})
}
