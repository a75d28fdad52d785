package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func runCmd(vars map[string]string, args ...string) (int, string, string) {
	return runCmdStdin(vars, "", args...)
}

// runCmdStdin runs a command in-process with stdin as its standard input.
func runCmdStdin(vars map[string]string, stdin string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, env{&out, &errOut, func(k string) string { return vars[k] }, strings.NewReader(stdin), environOf(vars)})
	return code, out.String(), errOut.String()
}

func TestEverySubcommandHasHelp(t *testing.T) {
	for name := range commands {
		code, out, errOut := runCmd(nil, name, "--help")
		if code != exitOK || !strings.Contains(out+errOut, "Usage: streaming-hub "+name) {
			t.Errorf("%s --help: exit %d\n%s%s", name, code, out, errOut)
		}
	}
	if code, out, _ := runCmd(nil, "--help"); code != exitOK || !strings.Contains(out, "Commands:") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
}

func TestUnknownCommandAndNoCommandAreUsageErrors(t *testing.T) {
	if code, _, errOut := runCmd(nil, "frobnicate"); code != exitUsage || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if code, _, _ := runCmd(nil); code != exitUsage {
		t.Errorf("no command: exit %d", code)
	}
}

func TestServe_FailsClosedWithOneLineNamingTheVariable(t *testing.T) {
	code, _, errOut := runCmd(map[string]string{
		"STREAMING_HUB_DATABASE_URL":  "postgres://nowhere/db",
		"STREAMING_HUB_KAFKA_BROKERS": "k:9092",
		"STREAMING_HUB_ADMIN_TOKEN":   "admin-token-long-enough",
	}, "serve")
	if code != exitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "STREAMING_HUB_KEK: required in serve mode") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCmd(map[string]string{"STREAMING_HUB_DISPATCH_WORKERS": "lots"}, "dev")
	if code != exitUsage || !strings.HasPrefix(errOut, "streaming-hub: STREAMING_HUB_DISPATCH_WORKERS: ") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

func TestMigrate_AppliesThenReportsCurrent(t *testing.T) {
	vars := map[string]string{"STREAMING_HUB_DATABASE_URL": "sqlite://" + filepath.Join(t.TempDir(), "hub.db")}
	if code, _, errOut := runCmd(vars, "migrate", "--check"); code != exitError || !strings.Contains(errOut, "run `streaming-hub migrate`") {
		t.Fatalf("--check on an empty database: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCmd(vars, "migrate", "--timeout", "0s"); code != exitUsage || !strings.Contains(errOut, "--timeout must be positive") {
		t.Fatalf("--timeout 0s: exit %d, %s", code, errOut)
	}
	if code, out, errOut := runCmd(vars, "migrate", "--timeout", "1h"); code != exitOK || out != "schema is current\n" {
		t.Fatalf("migrate: exit %d, %s%s", code, out, errOut)
	}
	if code, _, errOut := runCmd(vars, "migrate", "--check"); code != exitOK {
		t.Fatalf("--check after migrate: exit %d, %s", code, errOut)
	}
	if code, _, errOut := runCmd(nil, "migrate"); code != exitUsage || !strings.Contains(errOut, "STREAMING_HUB_DATABASE_URL: required") {
		t.Fatalf("no url: exit %d, %s", code, errOut)
	}
}

func TestVersion(t *testing.T) {
	if code, out, _ := runCmd(nil, "version"); code != exitOK || !strings.HasPrefix(out, "streaming-hub ") {
		t.Fatalf("exit %d: %q", code, out)
	}
}

// environOf is vars as os.Environ gives them.
func environOf(vars map[string]string) func() []string {
	return func() []string {
		var out []string
		for k, v := range vars {
			out = append(out, k+"="+v)
		}
		return out
	}
}

func TestDidYouMean_CommandsSubcommandsAndFlags(t *testing.T) {
	if code, _, errOut := runCmd(nil, "subscriptons"); code != exitUsage || !strings.Contains(errOut, `unknown command "subscriptons"; did you mean "subscriptions"?`) {
		t.Errorf("command: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCmd(nil, "help", "tennats"); code != exitUsage || !strings.Contains(errOut, `did you mean "tenants"?`) {
		t.Errorf("help command: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCmd(nil, "subscriptions", "lst"); code != exitUsage || !strings.Contains(errOut, `unknown subcommand "lst"; did you mean "list"?`) {
		t.Errorf("subcommand: exit %d: %s", code, errOut)
	}
	vars := map[string]string{"STREAMING_HUB_TOKEN": "t"}
	if code, _, errOut := runCmd(vars, "subscriptions", "list", "--limt", "5"); code != exitUsage || !strings.Contains(errOut, `unknown flag "--limt"; did you mean "--limit"?`) {
		t.Errorf("flag: exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCmd(nil, "frobnicate"); code != exitUsage || strings.Contains(errOut, "did you mean") {
		t.Errorf("nothing close: exit %d: %s", code, errOut)
	}
	// Each is one line and where to look, never the whole usage, which
	// would bury it.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"subscriptons"}, "streaming-hub: unknown command \"subscriptons\"; did you mean \"subscriptions\"?\nRun 'streaming-hub --help' for the commands.\n"},
		{[]string{"help", "tennats"}, "streaming-hub help: unknown command \"tennats\"; did you mean \"tenants\"?\nRun 'streaming-hub --help' for the commands.\n"},
		{[]string{"sub", "lst"}, "streaming-hub subscriptions: unknown subcommand \"lst\"; did you mean \"list\"?\nRun 'streaming-hub subscriptions --help' for its subcommands.\n"},
		{[]string{"subscriptions", "list", "--limt", "5"}, "streaming-hub subscriptions list: unknown flag \"--limt\"; did you mean \"--limit\"?\nRun 'streaming-hub subscriptions list --help' for its flags.\n"},
		{[]string{"produce", "--brokrs", "x"}, "streaming-hub produce: unknown flag \"--brokrs\"; did you mean \"--brokers\"?\nRun 'streaming-hub produce --help' for its flags.\n"},
		{[]string{"subscriptions", "update", "s", "--enabled", "maybe"}, "streaming-hub subscriptions update: invalid value \"maybe\" for flag --enabled: true or false\nRun 'streaming-hub subscriptions update --help' for its flags.\n"},
	} {
		code, out, errOut := runCmd(vars, c.args...)
		if code != exitUsage || out != "" || errOut != c.want {
			t.Errorf("%q: exit %d, stdout %q\nstderr %q\nwant   %q", c.args, code, out, errOut, c.want)
		}
	}
	for _, c := range []struct {
		a, b string
		d    int
	}{{"", "abc", 3}, {"kitten", "sitting", 3}, {"same", "same", 0}, {"subscriptons", "subscriptions", 1}} {
		if got := levenshtein(c.a, c.b); got != c.d {
			t.Errorf("levenshtein(%q, %q) = %d, want %d", c.a, c.b, got, c.d)
		}
	}
}
