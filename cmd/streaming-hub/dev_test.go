package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lerianstudio/streaming-hub/internal/testkit"
)

// runDevUntilInterrupted runs `streaming-hub dev` in-process as a user
// would: it waits for the banner, presses Ctrl-C (SIGINT to this process,
// which dev catches) and returns what dev printed once it has stopped.
func runDevUntilInterrupted(t *testing.T, vars map[string]string) (stdout, stderr string) {
	t.Helper()
	var out, errOut testkit.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"dev"}, env{&out, &errOut, func(k string) string { return vars[k] }, nil, environOf(vars)})
	}()
	// The banner is printed after dev has started listening for SIGINT.
	testkit.WaitFor(t, "the dev banner", func() bool {
		select {
		case code := <-done:
			t.Fatalf("dev exited %d before its banner:\n%s%s", code, out.String(), errOut.String())
		default:
		}
		return strings.Contains(out.String(), "Admin token")
	})
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("dev exited %d after SIGINT:\n%s%s", code, out.String(), errOut.String())
		}
	case <-time.After(60 * time.Second): // a safety net, not a bound under test
		t.Fatalf("dev did not stop after SIGINT:\n%s%s", out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

// A dev run on PostgreSQL from a clean working directory leaves that
// directory empty: the generated secrets go to the user's config folder
// (docs/cli.md), are reused by the next run, and no password from the
// database URL is ever printed.
func TestDev_OnPostgresWritesNothingInTheWorkingDirectory(t *testing.T) {
	testkit.Long(t)
	u, err := url.Parse(testkit.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	password, ok := u.User.Password()
	if !ok { // the test server trusts local connections: any password does
		password = "pw-that-must-never-be-printed"
		u.User = url.UserPassword(u.User.Username(), password)
	}
	cwd, config, home := t.TempDir(), t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("HOME", home)
	vars := map[string]string{
		"STREAMING_HUB_DATABASE_URL":   u.String(),
		"STREAMING_HUB_HTTP_ADDR":      "127.0.0.1:0",
		"STREAMING_HUB_DEV_KAFKA_ADDR": "127.0.0.1:0",
	}
	file := filepath.Join(config, "streaming-hub", "dev-secrets.json")
	noPassword := func(run, stdout, stderr string) {
		t.Helper()
		if strings.Contains(stdout+stderr, password) {
			t.Fatalf("%s: the database password was printed:\n%s%s", run, stdout, stderr)
		}
		if !strings.Contains(stdout, "Database       "+u.Scheme+"://"+u.User.Username()+":xxxxx@"+u.Host) {
			t.Fatalf("%s: banner lacks the redacted database URL:\n%s", run, stdout)
		}
	}
	cwdEmpty := func(run string) {
		t.Helper()
		if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
			t.Fatalf("%s: dev wrote %s in the working directory", run, entries[0].Name())
		}
	}

	out, errOut := runDevUntilInterrupted(t, vars)
	noPassword("first run", out, errOut)
	cwdEmpty("first run")
	if !strings.Contains(out, "Secrets        generated and kept in "+file) {
		t.Fatalf("first run: banner does not say the secrets were generated into %s:\n%s", file, out)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets file: %v, %v (want mode 0600)", fi, err)
	}
	if fi, err := os.Stat(filepath.Dir(file)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("secrets folder: %v, %v (want mode 0700)", fi, err)
	}
	kept, _ := os.ReadFile(file)

	out, errOut = runDevUntilInterrupted(t, vars)
	noPassword("second run", out, errOut)
	cwdEmpty("second run")
	if !strings.Contains(out, "Secrets        reused from "+file) || strings.Contains(out, "generated") {
		t.Fatalf("second run: banner does not say the secrets were reused from %s:\n%s", file, out)
	}
	if again, _ := os.ReadFile(file); string(again) != string(kept) {
		t.Fatal("second run rewrote the secrets file")
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("with XDG_CONFIG_HOME set, dev wrote %s in HOME", entries[0].Name())
	}

	// Without XDG_CONFIG_HOME the config folder is ~/.config.
	t.Setenv("XDG_CONFIG_HOME", "")
	out, errOut = runDevUntilInterrupted(t, vars)
	noPassword("run without XDG_CONFIG_HOME", out, errOut)
	cwdEmpty("run without XDG_CONFIG_HOME")
	if want := filepath.Join(home, ".config", "streaming-hub", "dev-secrets.json"); !strings.Contains(out, "Secrets        generated and kept in "+want) {
		t.Fatalf("without XDG_CONFIG_HOME: banner does not name %s:\n%s", want, out)
	}
}

// Secrets the environment gives are used and never written anywhere.
func TestDev_SecretsFromTheEnvironmentAreNotWritten(t *testing.T) {
	testkit.Long(t)
	cwd, config := t.TempDir(), t.TempDir()
	t.Chdir(cwd)
	t.Setenv("XDG_CONFIG_HOME", config)
	t.Setenv("HOME", config)
	vars := map[string]string{
		"STREAMING_HUB_DATABASE_URL":   testkit.PostgresURL(t),
		"STREAMING_HUB_HTTP_ADDR":      "127.0.0.1:0",
		"STREAMING_HUB_DEV_KAFKA_ADDR": "127.0.0.1:0",
		"STREAMING_HUB_KEK":            "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
		"STREAMING_HUB_ADMIN_TOKEN":    "token-from-the-environment",
	}
	out, _ := runDevUntilInterrupted(t, vars)
	if !strings.Contains(out, "Admin token    token-from-the-environment") || !strings.Contains(out, "Secrets        from the environment") {
		t.Fatalf("banner:\n%s", out)
	}
	for _, d := range []string{cwd, config} {
		if entries, _ := os.ReadDir(d); len(entries) != 0 {
			t.Fatalf("dev wrote %s in %s", entries[0].Name(), d)
		}
	}
}
