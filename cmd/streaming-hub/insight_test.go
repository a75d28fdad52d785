package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
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

// TestCLI_AdminHealthAndATenantsOwnTenant: `admin health` prints the
// whole hub's attempts over a window (the admin's), as `subscriptions
// health` prints a subscription's, with the buckets that had attempts;
// `tenants get` with a tenant key shows its own tenant and no other.
func TestCLI_AdminHealthAndATenantsOwnTenant(t *testing.T) {
	h := startHub(t)
	admin := newCLI(t, h.URL(), h.Config.AdminToken)
	admin.ok("tenants", "create", "--id", "acme", "--name", "Acme Corp")
	_, out, _ := runCmd(admin.vars, "keys", "create", "acme")
	acme := newCLI(t, h.URL(), field(t, out, "key"))

	if out := acme.ok("tenants", "get", "acme"); field(t, out, "name") != "Acme Corp" || field(t, out, "status") != "active" {
		t.Fatalf("tenants get of its own tenant with a key:\n%s", out)
	}
	other := acme.fail(exitError, "tenants", "get", "default") // the dev hub's own tenant
	unknown := acme.fail(exitError, "tenants", "get", "nobody")
	if !strings.Contains(other, `404 not_found: tenant "default" not found`) || strings.ReplaceAll(unknown, "nobody", "default") != other {
		t.Fatalf("tenants get of another tenant: %q; of an unknown one: %q", other, unknown)
	}

	sink := newEchoSink(t)
	var sub struct{ ID string }
	acme.json(&sub, "subscriptions", "create", "--name", "hooks", "--event-type", "transaction.posted@1", "--url", sink.URL+"/hook")
	acme.ok("subscriptions", "verify", sub.ID)
	acme.ok("produce", "--brokers", strings.Join(h.KafkaAddrs(), ","), "--tenant", "acme", "--id", "evt-health-1", "--timeout", "2m")
	var jobs jobsPage
	testkit.WaitFor(t, "the event to be delivered", func() bool {
		acme.json(&jobs, "deliveries", "list", sub.ID)
		return len(jobs.Data) == 1 && jobs.Data[0].Status == "succeeded"
	})

	// Health is written with the statistics, once a second.
	testkit.WaitFor(t, "the attempt in the health rollups", func() bool {
		out = admin.ok("admin", "health", "--window", "1h")
		return field(t, out, "attempts") == "1"
	})
	if field(t, out, "window") != "1h" || field(t, out, "attempts") != "1" || field(t, out, "successes") != "1" ||
		field(t, out, "failures") != "0" || field(t, out, "success_rate") != "100.0%" || field(t, out, "bucket_seconds") != "300" ||
		!regexp.MustCompile(`^p50 (<1 ms|[0-9.]+ m?s), p95 .*, p99 (<1 ms|[0-9.]+ m?s)$`).MatchString(field(t, out, "latency")) || field(t, out, "last_success_at") == "" {
		t.Fatalf("admin health:\n%s", out)
	}
	if !strings.Contains(out, "\nbuckets with attempts (1 of ") || !strings.Contains(out, "START ") {
		t.Fatalf("admin health buckets:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	busy := strings.Fields(lines[len(lines)-1])
	// START SUCCESSES FAILURES P99, the p99 as the console writes it ("12 ms", "<1 ms").
	if len(busy) != 5 || busy[1] != "1" || busy[2] != "0" || (busy[4] != "ms" && busy[4] != "s") {
		t.Fatalf("the busy bucket's row %q in\n%s", busy, out)
	}
	var raw struct {
		Window   string `json:"window"`
		Attempts int64  `json:"attempts"`
		Buckets  []any  `json:"buckets"`
	}
	admin.json(&raw, "admin", "health", "--window", "1h")
	if raw.Window != "1h" || raw.Attempts != 1 || len(raw.Buckets) < 12 || len(raw.Buckets) > 13 {
		t.Fatalf("admin health -o json: %+v", raw)
	}
	if out := admin.ok("admin", "health"); field(t, out, "window") != "24h" || field(t, out, "bucket_seconds") != "900" {
		t.Fatalf("admin health, the default window:\n%s", out)
	}
	if errOut := acme.fail(exitError, "admin", "health"); !strings.Contains(errOut, "403 forbidden") {
		t.Fatalf("admin health with a tenant key: %q", errOut)
	}
	if errOut := admin.fail(exitError, "admin", "health", "--window", "bogus"); !strings.Contains(errOut, "400 invalid: window") {
		t.Fatalf("admin health --window bogus: %q", errOut)
	}
	if errOut := admin.fail(exitUsage, "admin", "health", "extra"); !strings.Contains(errOut, "want no arguments") {
		t.Fatalf("admin health with an argument: %q", errOut)
	}
}
