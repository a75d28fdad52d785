package main

import (
	"strings"
	"testing"
)

// --help does not call STREAMING_HUB_TOKEN required when the current
// context holds a token: the command works without it.
func TestHelp_TheTokenIsRequiredOnlyWithoutAContextHoldingOne(t *testing.T) {
	vars := map[string]string{"XDG_CONFIG_HOME": t.TempDir()}
	help := func() string {
		t.Helper()
		code, out, errOut := runCmd(vars, "subscriptions", "list", "--help")
		if code != exitOK {
			t.Fatalf("--help: exit %d %s", code, errOut)
		}
		for _, line := range strings.Split(out+errOut, "\n") {
			if strings.Contains(line, "STREAMING_HUB_TOKEN ") {
				return line
			}
		}
		t.Fatalf("--help names no STREAMING_HUB_TOKEN:\n%s", out)
		return ""
	}
	if line := help(); !strings.HasSuffix(line, "(required unless the current context has a token)") {
		t.Errorf("no context: %q", line)
	}
	if code, _, errOut := runCmd(vars, "config", "set-context", "nokey", "--url", "http://127.0.0.1:1"); code != exitOK {
		t.Fatalf("set-context: %d %s", code, errOut)
	}
	if line := help(); !strings.HasSuffix(line, "(required unless the current context has a token)") {
		t.Errorf("a context without a token: %q", line)
	}
	if code, _, errOut := runCmd(vars, "config", "set-context", "nokey", "--token", "t"); code != exitOK {
		t.Fatalf("set-context: %d %s", code, errOut)
	}
	if line := help(); strings.Contains(line, "(required") || !strings.HasSuffix(line, "(optional: the current context has a token)") {
		t.Errorf("a context with a token: %q", line)
	}
	// Every client command's help says the same.
	for name, g := range groups {
		if name == "config" {
			continue
		}
		for _, s := range g.subs {
			_, out, errOut := runCmd(vars, name, s.name, "--help")
			out += errOut
			if strings.Contains(out, "STREAMING_HUB_TOKEN") && strings.Contains(out, "Bearer (required") {
				t.Errorf("%s %s --help calls the token required with a context holding one", name, s.name)
			}
		}
	}
}
