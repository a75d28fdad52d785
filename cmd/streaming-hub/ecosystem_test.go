package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

func TestVersionFlag_IsTheVersionCommand(t *testing.T) {
	_, want, _ := runCmd(nil, "version")
	for _, flag := range []string{"--version", "-version"} {
		if code, out, _ := runCmd(nil, flag); code != exitOK || out != want {
			t.Errorf("%s: exit %d, %q; want %q", flag, code, out, want)
		}
	}
	var v struct{ Version, Commit, Date, Go string }
	code, out, _ := runCmd(nil, "version", "-o", "json")
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || v.Version == "" || !strings.HasPrefix(v.Go, "go") {
		t.Fatalf("version -o json: exit %d, %q", code, out)
	}
	if code, out, _ := runCmd(nil, "version", "-o", "yaml"); code != exitOK || !strings.HasPrefix(out, "version: "+v.Version+"\n") || !strings.HasSuffix(out, "go: "+v.Go+"\n") {
		t.Fatalf("version -o yaml: exit %d, %q", code, out)
	}
}

func TestHelpCommand_PrintsThatCommandsHelpOnStdout(t *testing.T) {
	code, out, errOut := runCmd(nil, "help", "tenants")
	if code != exitOK || errOut != "" || !strings.HasPrefix(out, "Usage: streaming-hub tenants <subcommand>") ||
		strings.Contains(out, "Commands:") || !strings.Contains(out, "update") {
		t.Fatalf("help tenants: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	code, out, errOut = runCmd(nil, "help", "tenants", "list")
	if code != exitOK || errOut != "" || !strings.HasPrefix(out, "Usage: streaming-hub tenants list") || !strings.Contains(out, "--cursor") {
		t.Fatalf("help tenants list: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if code, out, _ := runCmd(nil, "tenants", "help", "get"); code != exitOK || !strings.HasPrefix(out, "Usage: streaming-hub tenants get") {
		t.Fatalf("tenants help get: exit %d\n%s", code, out)
	}
	for name := range commands {
		code, out, errOut := runCmd(nil, "help", name)
		if code != exitOK || errOut != "" || !strings.Contains(out, "Usage: streaming-hub "+name) {
			t.Errorf("help %s: exit %d\nstdout: %s\nstderr: %s", name, code, out, errOut)
		}
	}
	if code, out, _ := runCmd(nil, "help"); code != exitOK || !strings.Contains(out, "Commands:") || !strings.Contains(out, "completion") {
		t.Fatalf("help: exit %d\n%s", code, out)
	}
	if code, _, errOut := runCmd(nil, "help", "frobnicate"); code != exitUsage || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Fatalf("help frobnicate: exit %d, %s", code, errOut)
	}
}

// Long flags read --name in every help, as in other CLIs; -o keeps its
// one dash and shares a line with --output.
func TestHelp_ShowsLongFlagsWithTwoDashes(t *testing.T) {
	var helps [][]string
	for _, g := range groups {
		for _, s := range g.subs {
			helps = append(helps, []string{g.name, s.name})
		}
	}
	helps = append(helps, []string{"serve"}, []string{"migrate"}, []string{"version"}, []string{"rewrap"})
	for _, args := range helps {
		_, out, _ := runCmd(nil, append([]string{"help"}, args...)...)
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "  -") && !strings.HasPrefix(line, "  --") && !strings.HasPrefix(line, "  -o, --output") {
				t.Errorf("%v: a flag with one dash: %q", args, line)
			}
		}
		if len(args) == 2 && args[0] != "config" && (!strings.Contains(out, "\n  --server string") || !strings.Contains(out, "\n  -o, --output table|wide|json|yaml")) {
			t.Errorf("%v: no --server or -o, --output line:\n%s", args, out)
		}
	}
	if _, out, _ := runCmd(nil, "help", "serve"); !strings.Contains(out, "\n  --no-migrate\n") {
		t.Errorf("serve help:\n%s", out)
	}
}

// The completion scripts ask the program for a command's flags
// (__complete); in these tests the test binary stands in for the program
// when STREAMING_HUB_TEST_AS_CLI is set.
func init() {
	if os.Getenv("STREAMING_HUB_TEST_AS_CLI") == "1" {
		os.Exit(run(os.Args[1:], env{os.Stdout, os.Stderr, os.Getenv, os.Stdin, os.Environ}))
	}
}

func selfAsCLI(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return self
}

func TestCompletion_Bash_CompletesCommandsSubcommandsAndOutputs(t *testing.T) {
	testkit.Long(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	code, script, _ := runCmd(nil, "completion", "bash")
	if code != exitOK {
		t.Fatalf("completion bash: exit %d", code)
	}
	path := filepath.Join(t.TempDir(), "streaming-hub.bash")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	self := selfAsCLI(t)
	complete := func(words ...string) string {
		t.Helper()
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		prog := "streaming-hub() { STREAMING_HUB_TEST_AS_CLI=1 '" + self + "' \"$@\"; }; source " + path + "; COMP_WORDS=(" + strings.Join(quoted, " ") + "); COMP_CWORD=" +
			itoa(len(words)-1) + "; _streaming_hub; echo \"${COMPREPLY[*]}\""
		out, err := exec.Command(bash, "--norc", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, c := range []struct {
		words []string
		want  string
	}{
		{[]string{"streaming-hub", "ten"}, "tenants"},
		{[]string{"streaming-hub", "rej"}, "rejections"},
		{[]string{"streaming-hub", "comp"}, "completion"},
		{[]string{"streaming-hub", "tenants", ""}, "list get create update portal-link help"},
		{[]string{"streaming-hub", "subscriptions", "ro"}, "rotate-secret"},
		{[]string{"streaming-hub", "rejections", ""}, "list replay help"},
		{[]string{"streaming-hub", "completion", ""}, "bash zsh fish"},
		{[]string{"streaming-hub", "tenants", "list", "-o", ""}, "table wide json yaml"},
		{[]string{"streaming-hub", "tenants", "list", "--output", "y"}, "yaml"},
		{[]string{"streaming-hub", "help", "sub"}, "subscriptions"},
		{[]string{"streaming-hub", "help", "keys", "c"}, "create"},
		// Flags, asked of the program (__complete), per subcommand.
		{[]string{"streaming-hub", "subscriptions", "create", "--nats"}, "--nats-url"},
		{[]string{"streaming-hub", "subscriptions", "create", "--name", "x", "--sasl-p"}, "--sasl-password"},
		{[]string{"streaming-hub", "produce", "--tls-s"}, "--tls-server-name"},
		{[]string{"streaming-hub", "tenants", "list", "--ser"}, "--server"},
		{[]string{"streaming-hub", "subscriptions", "delete", "sub_1", "--y"}, "--yes"},
		{[]string{"streaming-hub", "subscriptions", "create", "--type", ""}, "webhook rabbitmq kafka nats pubsub"},
		{[]string{"streaming-hub", "--vers"}, "--version"},
		// The singular names and sub offer what their plural offers.
		{[]string{"streaming-hub", "sub", ""}, "list get create update delete verify rotate-secret health test disabled help"},
		{[]string{"streaming-hub", "subs", "ro"}, "rotate-secret"},
		{[]string{"streaming-hub", "subscription", "dis"}, "disabled"},
		{[]string{"streaming-hub", "delivery", ""}, "list get replay replay-subscription search help"},
		{[]string{"streaming-hub", "tenant", "c"}, "create"},
		{[]string{"streaming-hub", "key", ""}, "create delete list help"},
		{[]string{"streaming-hub", "event", "p"}, "pull"},
		{[]string{"streaming-hub", "rejection", ""}, "list replay help"},
		{[]string{"streaming-hub", "portal-link", "r"}, "revoke"},
		{[]string{"streaming-hub", "help", "sub", "ro"}, "rotate-secret"},
		{[]string{"streaming-hub", "sub", "create", "--nats"}, "--nats-url"},
	} {
		if got := complete(c.words...); got != c.want {
			t.Errorf("%q: completes %q, want %q", c.words, got, c.want)
		}
	}
}

func TestCompletion_ZshAndFish_NameEveryCommandAndParse(t *testing.T) {
	for _, shell := range []string{"zsh", "fish"} {
		code, script, _ := runCmd(nil, "completion", shell)
		if code != exitOK {
			t.Fatalf("completion %s: exit %d", shell, code)
		}
		for name, g := range groups {
			for _, s := range g.subs {
				if !strings.Contains(script, s.name) {
					t.Errorf("%s: %s %s is not completed", shell, name, s.name)
				}
			}
		}
		for name := range commands {
			if !strings.Contains(script, name) {
				t.Errorf("%s: %s is not completed", shell, name)
			}
		}
		bin, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s is not installed: the script's syntax is not checked", shell)
			continue
		}
		path := filepath.Join(t.TempDir(), "completion."+shell)
		os.WriteFile(path, []byte(script), 0o644)
		if out, err := exec.Command(bin, "-n", path).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, out)
		}
		if shell == "fish" {
			stub := "function streaming-hub; env STREAMING_HUB_TEST_AS_CLI=1 '" + selfAsCLI(t) + "' $argv; end; "
			out, err := exec.Command(bin, "--no-config", "-c", stub+"source "+path+"; complete -C'streaming-hub tenants '; complete -C'streaming-hub events pull -o '; complete -C'streaming-hub subscriptions create --nats'; complete -C'streaming-hub delivery '").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "list\t") || !strings.Contains(string(out), "yaml\t") || !strings.Contains(string(out), "--nats-url") ||
				!strings.Contains(string(out), "replay-subscription\t") {
				t.Errorf("fish completes %q (%v)", out, err)
			}
		}
	}
	if code, _, errOut := runCmd(nil, "completion", "powershell"); code != exitUsage || !strings.Contains(errOut, `unknown shell "powershell"`) {
		t.Errorf("completion powershell: exit %d, %s", code, errOut)
	}
}

func TestOutputYAML(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"id":"acme","n":3,"ok":true,"none":null,"list":[],"obj":{}}`,
			"id: acme\n\"n\": 3\nok: true\nnone: null\nlist: []\nobj: {}\n"},
		// "n" and "y" read as booleans in YAML 1.1: quoted.
		{`{"data":[{"id":"a","tags":["x","y"]},{"id":"b","h":{"K":"v"}}],"next_cursor":null}`,
			"data:\n  - id: a\n    tags:\n      - x\n      - \"y\"\n  - id: b\n    h:\n      K: v\nnext_cursor: null\n"},
		// Strings that would read as something else are quoted.
		{`{"a":"true","b":"10","c":"2026-11-30T12:00:00Z","d":"","e":"x: y","f":"line\nbreak","g":"- not a list","h":"ce-id"}`,
			"a: \"true\"\nb: \"10\"\nc: \"2026-11-30T12:00:00Z\"\nd: \"\"\ne: \"x: y\"\nf: \"line\\nbreak\"\ng: \"- not a list\"\nh: ce-id\n"},
		{`[1,[2,3]]`, "- 1\n-\n  - 2\n  - 3\n"},
		{`"plain"`, "plain\n"},
	} {
		var b strings.Builder
		if err := printYAML(&b, []byte(c.in)); err != nil || b.String() != c.want {
			t.Errorf("%s:\ngot  %q (%v)\nwant %q", c.in, b.String(), err, c.want)
		}
	}
}

// Against a real hub: rejections list in every output form, and errors
// as JSON under -o json.
func TestCLI_RejectionsAndOutputForms(t *testing.T) {
	h := startHub(t)
	admin := newCLI(t, h.URL(), h.Config.AdminToken)
	brokers := strings.Join(h.KafkaAddrs(), ",")
	admin.ok("produce", "--brokers", brokers, "--id", "bad-cli-1", "--header", "ce-specversion=0.3", "--timeout", testkit.Patience.String())

	var page struct {
		Data []struct {
			ID      int64             `json:"id"`
			CEID    string            `json:"ce_id"`
			Reason  string            `json:"reason"`
			Headers map[string]string `json:"headers"`
		} `json:"data"`
		NextCursor *string `json:"next_cursor"`
	}
	testkit.WaitFor(t, "the bad record to be rejected", func() bool {
		admin.json(&page, "rejections", "list")
		return len(page.Data) == 1
	})
	rej := page.Data[0]
	if rej.CEID != "bad-cli-1" || rej.Reason != "ce-specversion must be 1.0" || rej.Headers["ce-specversion"] != "0.3" {
		t.Fatalf("rejection: %+v", rej)
	}
	out := admin.ok("rejections", "list")
	if r := row(t, out, itoa(rej.ID)); r[1] != "lerian.streaming.ledger_transaction.posted" || r[4] != "bad-cli-1" || !strings.Contains(out, "ce-specversion must be 1.0") {
		t.Fatalf("rejections list:\n%s", out)
	}
	out = admin.ok("rejections", "list", "-o", "yaml")
	if !strings.HasPrefix(out, "data:\n  - id: "+itoa(rej.ID)+"\n") || !strings.Contains(out, "\n    ce_id: bad-cli-1\n") ||
		!strings.Contains(out, "\n      ce-specversion: \"0.3\"\n") || !strings.HasSuffix(out, "next_cursor: null\n") {
		t.Fatalf("rejections list -o yaml:\n%s", out)
	}
	if out := admin.ok("tenants", "get", "default", "-o", "yaml"); !strings.HasPrefix(out, "id: default\nname: ") || !strings.Contains(out, "\nstatus: active\n") {
		t.Fatalf("tenants get -o yaml:\n%s", out)
	}
	// Replayed from its source: refused again, quarantined a second time.
	var replay struct {
		RejectionID int64   `json:"rejection_id"`
		Offset      int64   `json:"offset"`
		Verdict     string  `json:"verdict"`
		Reason      *string `json:"reason"`
		Quarantined bool    `json:"quarantined"`
	}
	admin.json(&replay, "rejections", "replay", itoa(rej.ID))
	if replay.RejectionID != rej.ID || replay.Verdict != "reject" || replay.Reason == nil || *replay.Reason != rej.Reason || !replay.Quarantined {
		t.Fatalf("rejections replay -o json: %+v", replay)
	}
	if out := admin.ok("rejections", "replay", itoa(rej.ID)); !strings.Contains(out, "verdict:") || !strings.Contains(out, "reject") ||
		!strings.Contains(out, "lerian.streaming.ledger_transaction.posted/0@") {
		t.Fatalf("rejections replay:\n%s", out)
	}
	if errOut := admin.fail(exitError, "rejections", "replay", "999999"); !strings.HasPrefix(errOut, "streaming-hub: 404 ") {
		t.Fatalf("rejections replay of an unknown id: %q", errOut)
	}
	admin.json(&page, "rejections", "list")
	if len(page.Data) != 3 {
		t.Fatalf("after two replays, %d rejections, want 3", len(page.Data))
	}
	// A tenant key is refused on the admin endpoint.
	var key struct{ Key string }
	admin.json(&key, "keys", "create", "default")
	if errOut := newCLI(t, h.URL(), key.Key).fail(exitError, "rejections", "list"); !strings.HasPrefix(errOut, "streaming-hub: 403 ") {
		t.Fatalf("tenant key: %q", errOut)
	}

	// Errors under -o json are JSON, one line on stderr, stdout empty.
	type jsonError struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Status  int    `json:"status"`
		} `json:"error"`
	}
	for _, c := range []struct {
		vars       map[string]string
		args       []string
		exit       int
		code       string
		status     int
		messageHas string
	}{
		{admin.vars, []string{"tenants", "get", "nope"}, exitError, "not_found", 404, "nope"},
		{admin.vars, []string{"subscriptions", "list"}, exitError, "invalid", 400, "--tenant"},
		{admin.vars, []string{"tenants", "list", "--server", "http://127.0.0.1:1"}, exitError, "request_failed", 0, "127.0.0.1:1"},
		{admin.vars, []string{"tenants", "get"}, exitUsage, "usage", 0, "want <id>"},
		{map[string]string{"STREAMING_HUB_SERVER": h.URL()}, []string{"tenants", "list"}, exitUsage, "usage", 0, "STREAMING_HUB_TOKEN"},
	} {
		code, out, errOut := runCmd(c.vars, append(c.args, "-o", "json")...)
		var e jsonError
		if code != c.exit || out != "" || strings.Count(errOut, "\n") != 1 || json.Unmarshal([]byte(errOut), &e) != nil ||
			e.Error.Code != c.code || e.Error.Status != c.status || !strings.Contains(e.Error.Message, c.messageHas) {
			t.Errorf("%q -o json: exit %d, stdout %q, stderr %q", c.args, code, out, errOut)
		}
	}
}
