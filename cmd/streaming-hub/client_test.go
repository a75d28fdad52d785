package main

import (
	"encoding/json"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/devhub"
	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// cli runs client commands in-process against a hub with one token.
type cli struct {
	t    *testing.T
	vars map[string]string
}

func newCLI(t *testing.T, server, token string, more ...string) cli {
	vars := map[string]string{"STREAMING_HUB_SERVER": server, "STREAMING_HUB_TOKEN": token}
	for i := 0; i+1 < len(more); i += 2 {
		vars[more[i]] = more[i+1]
	}
	return cli{t, vars}
}

// ok runs a command that must succeed and returns its stdout.
func (c cli) ok(args ...string) string {
	c.t.Helper()
	code, out, errOut := runCmd(c.vars, args...)
	if code != exitOK {
		c.t.Fatalf("%s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// json runs a command with -o json that must succeed and decodes its
// answer.
func (c cli) json(v any, args ...string) {
	c.t.Helper()
	out := c.ok(append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		c.t.Fatalf("%s: %v in %s", strings.Join(args, " "), err, out)
	}
}

// fail runs a command that must fail with code and returns its stderr,
// which must be one line.
func (c cli) fail(code int, args ...string) string {
	c.t.Helper()
	got, out, errOut := runCmd(c.vars, args...)
	if got != code || strings.Count(errOut, "\n") != 1 {
		c.t.Fatalf("%s: exit %d (want %d), stderr not one line\nstdout: %s\nstderr: %s", strings.Join(args, " "), got, code, out, errOut)
	}
	return errOut
}

// field returns the value of a "key: value" line of get's table output.
func field(t *testing.T, out, key string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no %q line in\n%s", key, out)
	return ""
}

// row returns the cells of the table line whose first cell is first.
func row(t *testing.T, out, first string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if cells := strings.Fields(line); len(cells) > 0 && cells[0] == first {
			return cells
		}
	}
	t.Fatalf("no row %q in\n%s", first, out)
	return nil
}

// echoSink is a real webhook destination that answers 200 with the request
// body, so verification probes find their challenge.
type echoSink struct {
	*httptest.Server
	mu   sync.Mutex
	hits []http.Header
}

func newEchoSink(t *testing.T) *echoSink {
	s := &echoSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.hits = append(s.hits, r.Header.Clone())
		s.mu.Unlock()
		w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

// deliveries counts the events delivered (not probes) with header
// X-Custom: custom.
func (s *echoSink) deliveries(custom string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, h := range s.hits {
		if h.Get("X-Custom") == custom && h.Get("X-Lerian-Event-Type") == "transaction.posted" {
			n++
		}
	}
	return n
}

type jobsPage struct {
	Data []struct {
		ID       string `json:"id"`
		EventID  string `json:"event_id"`
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
	} `json:"data"`
	NextCursor *string `json:"next_cursor"`
}

func startHub(t *testing.T) *devhub.Hub {
	return devhub.Start(t, devhub.Options{Env: map[string]string{"STREAMING_HUB_DISPATCH_IDLE_INTERVAL_MS": "20"}})
}

// The whole life of a tenant through the CLI against a real hub: roster,
// key, subscription to a real sink, an event produced to the hub's Kafka,
// its delivery, replays, and the subscription's end.
func TestCLI_RoundTrip(t *testing.T) {
	h := startHub(t)
	admin := newCLI(t, h.URL(), h.Config.AdminToken)

	// Tenants.
	out := admin.ok("tenants", "create", "--id", "acme", "--name", "Acme Corp")
	if field(t, out, "id") != "acme" || field(t, out, "status") != "active" {
		t.Fatalf("create:\n%s", out)
	}
	out = admin.ok("tenants", "list")
	if !strings.HasPrefix(out, "ID ") || !strings.Contains(strings.Split(out, "\n")[0], "CREATED") {
		t.Fatalf("list has no header:\n%s", out)
	}
	if r := row(t, out, "acme"); r[1] != "Acme" || r[2] != "Corp" || r[3] != "active" {
		t.Fatalf("list row %q", r)
	}
	row(t, out, "default") // the seeded tenant
	var tenant struct{ ID, Name, Status, CreatedAt string }
	admin.json(&tenant, "tenants", "get", "acme")
	if tenant.ID != "acme" || tenant.Name != "Acme Corp" || tenant.Status != "active" {
		t.Fatalf("get -o json: %+v", tenant)
	}
	var raw map[string]any
	admin.json(&raw, "tenants", "get", "acme")
	if _, ok := raw["created_at"]; !ok || len(raw) != 4 {
		t.Fatalf("get -o json is not the API's answer: %v", raw)
	}
	if out := admin.ok("tenants", "update", "acme", "--name", "Acme"); field(t, out, "name") != "Acme" {
		t.Fatalf("update:\n%s", out)
	}
	var one struct {
		Data       []tenantView `json:"data"`
		NextCursor *string      `json:"next_cursor"`
	}
	code, _, errOut := runCmd(admin.vars, "tenants", "list", "--limit", "1", "-o", "json")
	if code != exitOK || !strings.HasPrefix(errOut, "more: --cursor ") {
		t.Fatalf("list --limit 1: exit %d, stderr %q", code, errOut)
	}
	admin.json(&one, "tenants", "list", "--limit", "1", "--cursor", strings.TrimSpace(strings.TrimPrefix(errOut, "more: --cursor ")))
	if len(one.Data) != 1 || one.Data[0].ID != "default" {
		t.Fatalf("second page: %+v", one)
	}

	// A key, shown once, acts as the tenant.
	code, out, errOut = runCmd(admin.vars, "keys", "create", "acme")
	if code != exitOK || !strings.Contains(errOut, "shown only now") {
		t.Fatalf("keys create: exit %d\n%s%s", code, out, errOut)
	}
	key, keyID := field(t, out, "key"), field(t, out, "id")
	if !strings.Contains(key, keyID) || field(t, out, "tenant_id") != "acme" {
		t.Fatalf("keys create:\n%s", out)
	}
	acme := newCLI(t, h.URL(), key)

	// A subscription to a real sink.
	sink := newEchoSink(t)
	var sub struct {
		ID                string   `json:"id"`
		SigningSecret     string   `json:"signing_secret"`
		VerificationState string   `json:"verification_state"`
		RetrySchedule     []string `json:"retry_schedule"`
		Destination       struct {
			URL     string
			Headers map[string]string
		}
		EventTypes []struct {
			Type        string
			SchemaMajor int `json:"schema_major"`
		} `json:"event_types"`
	}
	// type:major is read as type@major.
	acme.json(&sub, "subscriptions", "create", "--name", "hooks", "--event-type", "transaction.posted:1",
		"--url", sink.URL+"/hook", "--header", "X-Custom=cli", "--retry-schedule", "1s, 2s", "--max-in-flight", "2")
	if !strings.HasPrefix(sub.SigningSecret, "whsec_") || sub.VerificationState != "pending" ||
		sub.Destination.URL != sink.URL+"/hook" || sub.Destination.Headers["X-Custom"] != "cli" ||
		!reflect.DeepEqual(sub.RetrySchedule, []string{"1s", "2s"}) ||
		len(sub.EventTypes) != 1 || sub.EventTypes[0].Type != "transaction.posted" || sub.EventTypes[0].SchemaMajor != 1 {
		t.Fatalf("create: %+v", sub)
	}
	out = acme.ok("subscriptions", "list")
	if r := row(t, out, sub.ID); !reflect.DeepEqual(r[1:], []string{"hooks", sink.URL + "/hook", "true", "pending", "closed"}) {
		t.Fatalf("list row %q in\n%s", r, out)
	}
	// The admin token names the tenant with --tenant; flags after the id.
	var got struct{ ID, TenantID string }
	newCLI(t, h.URL(), h.Config.AdminToken).json(&got, "subscriptions", "get", sub.ID, "--tenant", "acme")
	if got.ID != sub.ID {
		t.Fatalf("get: %+v", got)
	}
	out = acme.ok("subscriptions", "get", sub.ID)
	if field(t, out, "headers") != "X-Custom=cli" || field(t, out, "retry_schedule") != "1s, 2s" ||
		field(t, out, "event_types") != "transaction.posted@1" || field(t, out, "max_in_flight") != "2" {
		t.Fatalf("get:\n%s", out)
	}
	if strings.Contains(out, "signing_secret") || strings.Contains(out, sub.SigningSecret) {
		t.Fatalf("get shows the secret:\n%s", out)
	}
	out = acme.ok("subscriptions", "verify", sub.ID)
	if field(t, out, "verification_state") != "active" || field(t, out, "enabled") != "true" {
		t.Fatalf("verify:\n%s", out)
	}

	// An event produced to the hub's Kafka is delivered.
	out = acme.ok("produce", "--brokers", strings.Join(h.KafkaAddrs(), ","), "--tenant", "acme", "--id", "evt-cli-1", "--timeout", "2m")
	if !strings.Contains(out, "ce-id=evt-cli-1 ") || !strings.Contains(out, "topic=lerian.streaming.ledger_transaction.posted ") {
		t.Fatalf("produce: %s", out)
	}
	var jobs jobsPage
	testkit.WaitFor(t, "the event to be delivered", func() bool {
		acme.json(&jobs, "deliveries", "list", sub.ID)
		return len(jobs.Data) == 1 && jobs.Data[0].Status == "succeeded"
	})
	job := jobs.Data[0]
	if job.EventID != "evt-cli-1" || job.Attempts != 1 || sink.deliveries("cli") != 1 {
		t.Fatalf("delivery %+v, sink hits %d", job, sink.deliveries("cli"))
	}
	out = acme.ok("deliveries", "list", sub.ID, "--status", "succeeded")
	if r := row(t, out, job.ID); r[1] != "evt-cli-1" || r[3] != "succeeded" || r[4] != "1" {
		t.Fatalf("deliveries list row %q", r)
	}
	if !strings.Contains(out, "NEXT_ATTEMPT") {
		t.Fatalf("deliveries list header:\n%s", out)
	}
	out = acme.ok("deliveries", "get", job.ID)
	if field(t, out, "event_id") != "evt-cli-1" || field(t, out, "status") != "succeeded" || !strings.Contains(out, "\nattempt_log:\n") {
		t.Fatalf("deliveries get:\n%s", out)
	}
	// STARTED, then the duration as the console writes it ("<1 ms", "12 ms", "1.2 s"; never Go's "12ms"), then the status.
	if lines := strings.Split(strings.TrimSpace(out[strings.Index(out, "attempt_log:"):]), "\n"); len(lines) != 3 ||
		!regexp.MustCompile(`^\S+\s+(<1 ms|[0-9]+ ms|[0-9.]+ s)\s+200\s`).MatchString(lines[2]+" ") {
		t.Fatalf("attempt log %q", lines)
	}
	var replay struct{ ID, EventID, Status string }
	acme.json(&replay, "deliveries", "replay", job.ID)
	if replay.ID == job.ID || replay.ID == "" {
		t.Fatalf("replay: %+v", replay)
	}
	testkit.WaitFor(t, "the replay to be delivered", func() bool { return sink.deliveries("cli") == 2 })
	if out := acme.ok("deliveries", "replay-subscription", sub.ID, "--status", "dead_lettered"); out != "replayed: 0\nmatched: 0\nalready replayed: 0\nreason: no dead letters\n" {
		t.Fatalf("replay-subscription: %q", out)
	}

	// Rotate, disable, delete.
	out = acme.ok("subscriptions", "rotate-secret", sub.ID, "--overlap", "1h")
	if s := field(t, out, "signing_secret"); !strings.HasPrefix(s, "whsec_") || s == sub.SigningSecret {
		t.Fatalf("rotate-secret:\n%s", out)
	}
	out = acme.ok("subscriptions", "update", sub.ID, "--enabled", "false")
	if field(t, out, "enabled") != "false" || field(t, out, "disabled_reason") == "-" {
		t.Fatalf("update --enabled false:\n%s", out)
	}
	out = acme.ok("subscriptions", "update", sub.ID, "--name", "renamed", "--retry-schedule", "default")
	if field(t, out, "name") != "renamed" || field(t, out, "retry_schedule") != "default" || field(t, out, "enabled") != "false" {
		t.Fatalf("update --name:\n%s", out)
	}
	if field(t, out, "filters") != "none" {
		t.Fatalf("no filters shows %q", field(t, out, "filters"))
	}
	out = acme.ok("subscriptions", "update", sub.ID, "--filters", `[{"prefix":{"source":"//midaz/"}}, {"not":{"exact":{"subject":"x"}}}]`)
	if f := field(t, out, "filters"); f != `[{"prefix":{"source":"//midaz/"}},{"not":{"exact":{"subject":"x"}}}]` {
		t.Fatalf("update --filters shows %q", f)
	}
	if errOut := acme.fail(exitError, "subscriptions", "update", sub.ID, "--filters", `[{"regex":{"subject":"x"}}]`); !strings.Contains(errOut, `400 invalid: filters[0]: unknown dialect "regex"`) {
		t.Fatalf("an invalid filter: %q", errOut)
	}
	out = acme.ok("subscriptions", "update", sub.ID, "--filters", "none")
	if field(t, out, "filters") != "none" {
		t.Fatalf("update --filters none shows %q", field(t, out, "filters"))
	}
	// Deletes ask: without a terminal and without --yes nothing is done; on
	// a terminal "n" keeps it, "y" deletes it.
	if errOut := acme.fail(exitUsage, "subscriptions", "delete", sub.ID); !strings.Contains(errOut, "stdin is not a terminal") || !strings.Contains(errOut, "pass --yes") {
		t.Fatalf("delete without --yes: %q", errOut)
	}
	acme.ok("subscriptions", "get", sub.ID)
	stdinIsTerminal = func(io.Reader) bool { return true }
	defer func() { stdinIsTerminal = func(io.Reader) bool { return false } }()
	if code, out, errOut := runCmdStdin(acme.vars, "n\n", "subscriptions", "delete", sub.ID); code != exitError || out != "" || !strings.Contains(errOut, "Delete subscription "+sub.ID+"? [y/N] ") {
		t.Fatalf("delete answered n: exit %d %q %q", code, out, errOut)
	}
	acme.ok("subscriptions", "get", sub.ID)
	if code, out, errOut := runCmdStdin(acme.vars, "y\n", "subscriptions", "delete", sub.ID); code != exitOK || out != "deleted subscription "+sub.ID+"\n" {
		t.Fatalf("delete answered y: exit %d %q %q", code, out, errOut)
	}
	if errOut := acme.fail(exitError, "subscriptions", "get", sub.ID); !strings.HasPrefix(errOut, "streaming-hub: 404 not_found: ") {
		t.Fatalf("get after delete: %q", errOut)
	}

	// A revoked key is refused at once.
	if out := admin.ok("keys", "delete", "acme", keyID, "--yes"); out != "deleted key "+keyID+" of tenant acme\n" {
		t.Fatalf("keys delete: %q", out)
	}
	if errOut := acme.fail(exitError, "subscriptions", "list"); !strings.HasPrefix(errOut, "streaming-hub: 401 unauthorized: ") {
		t.Fatalf("revoked key: %q", errOut)
	}
}

// A subscription's whole body may come from a file or stdin, for what the
// flags do not cover (destination.auth).
func TestCLI_SubscriptionFromFile(t *testing.T) {
	h := startHub(t)
	c := newCLI(t, h.URL(), h.Config.AdminToken, "STREAMING_HUB_TENANT", "default")
	body := `{"name":"from-stdin","event_types":[{"type":"transaction.posted","schema_major":1}],
	  "destination":{"type":"webhook","url":"http://127.0.0.1:9/hook","auth":{"type":"bearer","token":"t0k"}}}`
	code, out, errOut := runCmdStdin(c.vars, body, "subscriptions", "create", "--from-file", "-")
	if code != exitOK || field(t, out, "auth") != "bearer" || field(t, out, "name") != "from-stdin" {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if errOut := c.fail(exitUsage, "subscriptions", "create", "--from-file", "-", "--name", "x"); !strings.Contains(errOut, "--from-file and --name") {
		t.Fatalf("from-file with flags: %q", errOut)
	}
	if errOut := c.fail(exitUsage, "subscriptions", "create", "--name", "x"); !strings.Contains(errOut, "--event-type, --url: required") {
		t.Fatalf("create without flags: %q", errOut)
	}
	// The API's validation answers as one line.
	errOut = c.fail(exitError, "subscriptions", "create", "--name", "x", "--event-type", "bad", "--url", "http://127.0.0.1:9/")
	if !strings.HasPrefix(errOut, "streaming-hub: 400 invalid: event_types[0].type: ") {
		t.Fatalf("invalid event type: %q", errOut)
	}

	// A transform (docs/filters-and-transforms.md):
	// from the flag or a file, shown, refused when it does not compile,
	// cleared by an empty one.
	out = c.ok("subscriptions", "create", "--name", "shaped", "--event-type", "transaction.posted", "--url", "http://127.0.0.1:9/hook",
		"--transform", "{kind: .type}")
	if field(t, out, "transform") != "{kind: .type}" {
		t.Fatalf("create --transform:\n%s", out)
	}
	id := field(t, out, "id")
	code, out, errOut = runCmdStdin(c.vars, "{\n  amount: .data.amount\n}\n", "subscriptions", "update", id, "--transform-file", "-")
	if code != exitOK || field(t, out, "transform") != "{ amount: .data.amount }" {
		t.Fatalf("update --transform-file: exit %d\n%s%s", code, out, errOut)
	}
	if errOut := c.fail(exitError, "subscriptions", "update", id, "--transform", "{a: }"); !strings.HasPrefix(errOut, "streaming-hub: 400 invalid: transform: ") {
		t.Fatalf("a transform that does not compile: %q", errOut)
	}
	if errOut := c.fail(exitUsage, "subscriptions", "update", id, "--transform", ".", "--transform-file", "-"); !strings.Contains(errOut, "--transform and --transform-file") {
		t.Fatalf("both transform flags: %q", errOut)
	}
	if out := c.ok("subscriptions", "update", id, "--transform", ""); field(t, out, "transform") != "none" {
		t.Fatalf("update --transform '':\n%s", out)
	}
}

// produce sends a record the hub admits: pull shows it, with its subject
// and data; --follow prints events as they arrive.
func TestProduce_IsAcceptedByTheHub(t *testing.T) {
	h := startHub(t)
	brokers := strings.Join(h.KafkaAddrs(), ",")
	c := newCLI(t, h.URL(), h.Config.AdminToken, "STREAMING_HUB_TENANT", "default", "STREAMING_HUB_KAFKA_BROKERS", brokers)

	code, out, errOut := runCmdStdin(c.vars, `{"n": 1}`, "produce", "--id", "evt-pull-1", "--subject", "acct-9", "--data", "-", "--timeout", "2m")
	if code != exitOK || !strings.HasPrefix(out, "produced ce-id=evt-pull-1 tenant=default topic=lerian.streaming.ledger_transaction.posted partition=") || !strings.Contains(out, " offset=") {
		t.Fatalf("produce: exit %d\n%s%s", code, out, errOut)
	}
	var page struct {
		Data []struct {
			ID, Type, Subject string
			CEType            string          `json:"ce_type"`
			Data              json.RawMessage `json:"data"`
		} `json:"data"`
		NextCursor string `json:"next_cursor"`
	}
	testkit.WaitFor(t, "the event to be pulled", func() bool {
		c.json(&page, "events", "pull", "--wait", "1s", "--types", "transaction.posted")
		return len(page.Data) == 1
	})
	ev := page.Data[0]
	if ev.ID != "evt-pull-1" || ev.Subject != "acct-9" || ev.Type != "transaction.posted" || ev.CEType != "studio.lerian.transaction.posted" || string(compactJSON(ev.Data)) != `{"n":1}` {
		t.Fatalf("pulled %+v (data %s)", ev, ev.Data)
	}
	code, out, errOut = runCmd(c.vars, "events", "pull")
	if r := row(t, out, "1"); code != exitOK || r[1] != "evt-pull-1" || r[2] != "transaction.posted" || r[3] != "acct-9" || r[5] != `{"n":1}` {
		t.Fatalf("pull table: exit %d\n%s%s", code, out, errOut)
	}
	if errOut != "next: --after "+page.NextCursor+"\n" {
		t.Fatalf("pull stderr %q", errOut)
	}

	// --follow prints new events as they arrive, until --count.
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCmd(c.vars, "events", "pull", "--follow", "--after", page.NextCursor, "--wait", "2s", "--count", "2")
		done <- result{code, out, errOut}
	}()
	// Produced while --follow may still be starting: it reads from the
	// cursor, so it misses nothing either way.
	for _, id := range []string{"evt-follow-1", "evt-follow-2"} {
		c.ok("produce", "--id", id, "--timeout", "2m")
	}
	select {
	case r := <-done:
		if r.code != exitOK || strings.Count(r.out, "SEQ") != 1 || row(t, r.out, "2")[1] != "evt-follow-1" || row(t, r.out, "3")[1] != "evt-follow-2" {
			t.Fatalf("follow: exit %d\n%s%s", r.code, r.out, r.err)
		}
	case <-time.After(testkit.Patience):
		t.Fatal("follow did not stop after --count 2 events")
	}
}

func TestProduce_UnreachableBrokerFailsWithinTheTimeout(t *testing.T) {
	testkit.Long(t)
	code, out, errOut := runCmd(nil, "produce", "--brokers", "127.0.0.1:1", "--timeout", "2s")
	if code != exitError || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "streaming-hub: produce: no Kafka broker reachable at 127.0.0.1:1: ") {
		t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
	}

	// A broker that accepts connections and never answers: the command
	// gives up at --timeout, and says so. The answer naming the deadline
	// is the proof, whatever the machine's speed; a hang fails the safety
	// net. (The default timeout is 10s.)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		silent.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCmd(nil, "produce", "--brokers", silent.Addr().String(), "--timeout", "1s")
		done <- result{code, out, errOut}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(testkit.Patience):
		t.Fatal("produce to a silent broker with --timeout 1s never gave up")
	}
	if want := "streaming-hub: produce: no Kafka broker reachable at " + silent.Addr().String() + ": no answer within 1s (--timeout)\n"; r.code != exitError || r.out != "" || r.errOut != want {
		t.Fatalf("exit %d\nstdout %q\nstderr %q, want %q", r.code, r.out, r.errOut, want)
	}
	if code, _, errOut := runCmd(nil, "produce", "--type", "not.a.type"); code != exitUsage || !strings.Contains(errOut, "give --topic") {
		t.Fatalf("bad type: exit %d, %q", code, errOut)
	}
}

func TestCLI_Errors(t *testing.T) {
	h := startHub(t)
	admin := newCLI(t, h.URL(), h.Config.AdminToken)

	if errOut := (cli{t, map[string]string{"STREAMING_HUB_SERVER": h.URL()}}).fail(exitUsage, "subscriptions", "list"); !strings.Contains(errOut, "STREAMING_HUB_TOKEN: required") {
		t.Fatalf("no token: %q", errOut)
	}
	if errOut := admin.fail(exitError, "tenants", "get", "nope"); !strings.HasPrefix(errOut, "streaming-hub: 404 not_found: ") {
		t.Fatalf("404: %q", errOut)
	}
	if errOut := admin.fail(exitError, "subscriptions", "list"); !strings.HasPrefix(errOut, "streaming-hub: 400 invalid: X-Tenant-Id") {
		t.Fatalf("admin without --tenant: %q", errOut)
	}
	if errOut := admin.fail(exitError, "tenants", "list", "--server", "http://127.0.0.1:1"); !strings.Contains(errOut, "127.0.0.1:1") {
		t.Fatalf("unreachable server: %q", errOut)
	}
	if errOut := admin.fail(exitError, "tenants", "create", "--id", "default"); !strings.HasPrefix(errOut, "streaming-hub: 409 conflict: ") {
		t.Fatalf("duplicate tenant: %q", errOut)
	}
	if errOut := admin.fail(exitError, "events", "pull", "--tenant", "default", "--wait", "1m"); !strings.HasPrefix(errOut, "streaming-hub: 400 invalid: wait: ") {
		t.Fatalf("bad wait: %q", errOut)
	}
	for _, args := range [][]string{
		{"tenants", "get"},               // missing id
		{"tenants", "get", "a", "b"},     // one too many
		{"tenants", "list", "-o", "xml"}, // bad output
		{"tenants", "update", "acme"},    // nothing to change
		{"tenants", "create"},            // no --id
		{"subscriptions", "update", "s", "--enabled", "maybe"},
		{"subscriptions", "create", "--name", "n", "--url", "u", "--event-type", "t.p:x"},
	} {
		if code, _, errOut := runCmd(admin.vars, args...); code != exitUsage || errOut == "" {
			t.Errorf("%q: exit %d, %q", args, code, errOut)
		}
	}
	for _, g := range []string{"tenants", "keys", "subscriptions", "deliveries", "events"} {
		code, out, errOut := runCmd(admin.vars, g, "frobnicate")
		if code != exitUsage || out != "" || !strings.Contains(errOut, `unknown subcommand "frobnicate"`) || !strings.HasSuffix(errOut, "\nRun 'streaming-hub "+g+" --help' for its subcommands.\n") || strings.Contains(errOut, "Usage:") {
			t.Errorf("%s frobnicate: exit %d\n%s", g, code, errOut)
		}
		if code, _, errOut := runCmd(admin.vars, g); code != exitUsage || !strings.Contains(errOut, "Subcommands:") {
			t.Errorf("%s alone: exit %d\n%s", g, code, errOut)
		}
	}
}

func TestEveryClientSubcommandHasHelp(t *testing.T) {
	for _, g := range []group{tenantsGroup, keysGroup, portalLinksGroup, subscriptionsGroup, deliveriesGroup, eventsGroup} {
		if commands[g.name].run == nil {
			t.Errorf("%s is not a command", g.name)
		}
		for _, s := range g.subs {
			code, out, errOut := runCmd(nil, g.name, s.name, "--help")
			help := out + errOut
			if code != exitOK || !strings.Contains(help, "Usage: streaming-hub "+g.name+" "+s.name) ||
				!strings.Contains(help, "STREAMING_HUB_TOKEN") || !strings.Contains(help, "-server") {
				t.Errorf("%s %s --help: exit %d\n%s", g.name, s.name, code, help)
			}
		}
	}
	if _, _, help := runCmd(nil, "produce", "--help"); !strings.Contains(help, "STREAMING_HUB_KAFKA_BROKERS") {
		t.Errorf("produce --help:\n%s", help)
	}
}

func TestParseInterleaved(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		o    string
	}{
		{[]string{"sub_1", "-o", "json"}, []string{"sub_1"}, "json"},
		{[]string{"-o", "json", "sub_1"}, []string{"sub_1"}, "json"},
		{[]string{"a", "--o=json", "b"}, []string{"a", "b"}, "json"},
		{[]string{"a", "--", "-o", "b"}, []string{"a", "-o", "b"}, "table"},
		{[]string{"-"}, []string{"-"}, "table"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o := fs.String("o", "table", "")
		pos, err := parseInterleaved(fs, tc.args)
		if err != nil || !reflect.DeepEqual(pos, tc.pos) || *o != tc.o {
			t.Errorf("%q: %q -o %s, %v", tc.args, pos, *o, err)
		}
	}
}
