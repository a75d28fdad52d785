package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Contexts: kept in $XDG_CONFIG_HOME/streaming-hub/config.json, 0600 in a
// 0700 directory; API commands use the current one when no flag or
// variable gives the value; get-contexts never prints a token.
func TestCLI_Contexts(t *testing.T) {
	h := startHub(t)
	dir := t.TempDir()
	vars := map[string]string{"XDG_CONFIG_HOME": dir}
	c := cli{t, vars}

	if code, _, errOut := runCmd(vars, "config", "current-context"); code != exitError || !strings.Contains(errOut, "no current context") {
		t.Fatalf("current-context before any: exit %d %q", code, errOut)
	}
	if code, _, errOut := runCmd(vars, "tenants", "list"); code != exitUsage || !strings.Contains(errOut, "STREAMING_HUB_TOKEN: required") {
		t.Fatalf("no token anywhere: exit %d %q", code, errOut)
	}
	c.ok("config", "set-context", "local", "--url", h.URL(), "--token", h.Config.AdminToken)
	c.ok("config", "set-context", "acme", "--url", h.URL(), "--token", "not-a-key", "--tenant", "acme")
	path := filepath.Join(dir, "streaming-hub", "config.json")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config file: %v %v", fi.Mode(), err)
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Fatalf("config dir: %v", di.Mode())
	}
	if out := c.ok("config", "current-context"); out != "local\n" {
		t.Fatalf("the first context is current: %q", out)
	}
	out := c.ok("config", "get-contexts")
	if strings.Contains(out, h.Config.AdminToken) || strings.Contains(out, "not-a-key") {
		t.Fatalf("get-contexts shows a token:\n%s", out)
	}
	if r := row(t, out, "*"); r[1] != "local" || r[2] != h.URL() {
		t.Fatalf("current row %q in\n%s", r, out)
	}

	// The context's URL and token reach the API.
	c.ok("tenants", "create", "--id", "acme")
	row(t, c.ok("tenants", "list"), "acme")

	// A variable wins over the context, a flag over the variable.
	vars["STREAMING_HUB_TOKEN"] = "wrong"
	if errOut := c.fail(exitError, "tenants", "list"); !strings.Contains(errOut, "401") {
		t.Fatalf("env token over context: %q", errOut)
	}
	delete(vars, "STREAMING_HUB_TOKEN")
	vars["STREAMING_HUB_SERVER"] = "http://127.0.0.1:1"
	if errOut := c.fail(exitError, "tenants", "list"); !strings.Contains(errOut, "127.0.0.1:1") {
		t.Fatalf("env server over context: %q", errOut)
	}
	row(t, c.ok("tenants", "list", "--server", h.URL()), "acme")
	delete(vars, "STREAMING_HUB_SERVER")

	// use-context switches; the tenant comes with the context.
	c.ok("config", "use-context", "acme")
	if out := c.ok("config", "current-context"); out != "acme\n" {
		t.Fatalf("use-context: %q", out)
	}
	if errOut := c.fail(exitError, "subscriptions", "list"); !strings.Contains(errOut, "401") {
		t.Fatalf("acme context's bad key: %q", errOut)
	}
	if code, _, errOut := runCmd(vars, "config", "use-context", "acm"); code != exitUsage || !strings.Contains(errOut, `did you mean "acme"?`) {
		t.Fatalf("unknown context: exit %d %q", code, errOut)
	}
}
