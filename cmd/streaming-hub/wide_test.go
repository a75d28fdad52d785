package main

import (
	"strings"
	"testing"
)

// The resource commands answer to their singular (subscription, tenant,
// delivery, ...), help and completion included, and -o wide adds the
// columns the table leaves out, against a real hub.
func TestCLI_SingularNamesAndWideLists(t *testing.T) {
	h := startHub(t)
	admin := newCLI(t, h.URL(), h.Config.AdminToken)
	if out := admin.ok("tenant", "create", "--id", "acme"); field(t, out, "id") != "acme" {
		t.Fatalf("tenant create:\n%s", out)
	}
	if out := admin.ok("tenant", "get", "acme"); field(t, out, "status") != "active" {
		t.Fatalf("tenant get:\n%s", out)
	}
	acme := newCLI(t, h.URL(), h.Config.AdminToken, "STREAMING_HUB_TENANT", "acme")
	sink := newEchoSink(t)
	var sub struct{ ID string }
	acme.json(&sub, "subscription", "create", "--name", "hooks", "--event-type", "transaction.posted@1",
		"--url", sink.URL+"/hook", "--retry-schedule", "1s,2s", "--max-in-flight", "4")
	if sub.ID == "" {
		t.Fatal("subscription create gave no id")
	}
	narrow := acme.ok("subscriptions", "list")
	if got := acme.ok("sub", "list"); got != narrow {
		t.Fatalf("sub list differs from subscriptions list:\n%s\n%s", got, narrow)
	}
	if strings.Contains(narrow, "EVENT_TYPES") {
		t.Fatalf("the narrow table has the wide columns:\n%s", narrow)
	}
	wide := acme.ok("subscription", "list", "-o", "wide")
	header := strings.Fields(strings.SplitN(wide, "\n", 2)[0])
	want := []string{"ID", "NAME", "URL", "ENABLED", "STATE", "BREAKER", "KIND", "EVENT_TYPES", "MAX_IN_FLIGHT", "RETRY_SCHEDULE", "DISABLED_REASON", "CREATED"}
	if strings.Join(header, " ") != strings.Join(want, " ") {
		t.Fatalf("-o wide header %q, want %q", header, want)
	}
	r := row(t, wide, sub.ID)
	if len(r) != len(want) || r[6] != "webhook" || r[7] != "transaction.posted@1" || r[8] != "4" || r[9] != "1s,2s" || r[10] != "-" {
		t.Fatalf("-o wide row %q", r)
	}
	deliveries := acme.ok("delivery", "list", sub.ID, "-o", "wide")
	if h := strings.SplitN(deliveries, "\n", 2)[0]; !strings.HasSuffix(strings.TrimSpace(h), "CREATED  COMPLETED  REPLAYED_AS  LAST_ERROR") {
		t.Fatalf("deliveries list -o wide header %q", h)
	}

	// Help and completion say the plural; a bad -o names wide.
	if _, out, _ := runCmd(nil, "help", "subscription"); !strings.Contains(out, "Usage: streaming-hub subscriptions <subcommand>") {
		t.Fatalf("help subscription:\n%s", out)
	}
	if flags := strings.Join(flagsOf([]string{"subscription", "list"}), " "); !strings.Contains(flags, "--cursor") {
		t.Fatalf("completion of subscription list: %s", flags)
	}
	if errOut := acme.fail(exitUsage, "sub", "list", "-o", "tall"); !strings.Contains(errOut, "table, wide, json or yaml") {
		t.Fatalf("-o tall: %s", errOut)
	}
	if _, out, _ := runCmd(nil, "--help"); !strings.Contains(out, "subscription, delivery") {
		t.Fatalf("--help does not name the singular names:\n%s", out)
	}
}
