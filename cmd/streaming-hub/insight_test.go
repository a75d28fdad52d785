package main

import (
	"strings"
	"testing"
)

func TestCLI_InsightCommands(t *testing.T) {
	h := startHub(t)
	admin := newCLI(t, h.URL(), h.Config.AdminToken)
	admin.ok("tenants", "create", "--id", "acme")
	_, out, _ := runCmd(admin.vars, "keys", "create", "acme")
	key, keyID := field(t, out, "key"), field(t, out, "id")
	acme := newCLI(t, h.URL(), key)

	sink := newEchoSink(t)
	var sub struct {
		ID       string   `json:"id"`
		Warnings []string `json:"warnings"`
	}
	acme.json(&sub, "subscriptions", "create", "--name", "hooks", "--event-type", "transaction.psoted:1", "--url", sink.URL+"/hook")
	if len(sub.Warnings) != 1 || !strings.Contains(sub.Warnings[0], "transaction.psoted") {
		t.Fatalf("warnings %q", sub.Warnings)
	}

	out = acme.ok("subscriptions", "test", sub.ID, "--data", `{"hello":"world"}`)
	if field(t, out, "status_code") != "200" || field(t, out, "response_body") != `{"hello":"world"}` {
		t.Fatalf("subscriptions test:\n%s", out)
	}
	sink.mu.Lock()
	last := sink.hits[len(sink.hits)-1]
	sink.mu.Unlock()
	if last.Get("X-Lerian-Test") != "true" || last.Get("X-Lerian-Event-Type") != "hub.test" {
		t.Fatalf("test event headers %v", last)
	}

	out = admin.ok("keys", "list", "acme")
	if r := row(t, out, keyID); len(r) != 3 { // id, created, last used (acme just used it)
		t.Fatalf("keys list row %q in\n%s", r, out)
	}
	out = acme.ok("events", "types")
	row(t, out, "hub.subscription.disabled")
	out = acme.ok("deliveries", "search", "--status", "dead_lettered")
	if !strings.HasPrefix(out, "ID ") {
		t.Fatalf("deliveries search:\n%s", out)
	}
	out = acme.ok("subscriptions", "health", sub.ID, "--window", "1h")
	if field(t, out, "window") != "1h" || field(t, out, "attempts") != "0" {
		t.Fatalf("subscriptions health:\n%s", out)
	}
	if errOut := acme.fail(exitError, "events", "get", "evt-nope"); !strings.Contains(errOut, "not found") {
		t.Fatalf("events get of nothing: %q", errOut)
	}
}
